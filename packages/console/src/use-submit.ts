import { useState } from 'preact/hooks';
import { errorText } from './poll.js';

/** A form's submit handler around `action`: busy while it runs, its failure shown as `error` (the server's message). */
export function useSubmit(action: () => Promise<void>): {
  busy: boolean;
  error: string | null;
  submit: (e: Event) => Promise<void>;
} {
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await action();
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, submit };
}
