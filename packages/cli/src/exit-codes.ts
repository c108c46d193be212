/**
 * How `agentloop` exits. A followed run (`run --follow`, `runs events --follow`) says how it ended: completed, failed, cancelled, or could not
 * be followed to its end (the event stream was lost and not got back: the run may still be going).
 */
export const EXIT = {
  completed: 0,
  /** A request refused (e.g. the run was not created) or an unexpected error. */
  error: 1,
  usage: 2,
  failed: 3,
  cancelled: 4,
  unfollowable: 5,
} as const;

export const EXIT_CODES_HELP = `exit codes (run --follow and runs events --follow: how the run ended):
  0  completed (also: a command that succeeded)
  1  error: the api refused the request (e.g. the run was not created, or does not exist), could not be
     reached, or something unexpected
  2  usage: bad arguments
  3  the run failed
  4  the run was cancelled
  5  the run could not be followed to its end: its event stream was lost and not got back
     (reconnected with Last-Event-ID for up to --reconnect-ms); the run may still be going`;
