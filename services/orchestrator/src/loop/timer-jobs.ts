import { UnrecoverableError, type Job } from 'bullmq';
import {
  ExpireJobSchema,
  QUEUES,
  SummaryDeadlineJobSchema,
  compressJobId,
  isTerminalStatus,
} from '@agentloop/protocol';
import type { Logger, Metrics, RunScheduler, RunStore } from '@agentloop/runtime';
import type { DecisionService } from '../decisions/decision-service.js';

/**
 * The orchestrator queue's delayed jobs that are not iterations: a pause's expiry (`expire`) and a summary's deadline
 * (`summary_deadline`). Each checks the run is still where it was when the job was published, and does nothing else
 * otherwise (a duplicate or a late timer is harmless).
 */
export class TimerJobs {
  constructor(
    private readonly store: RunStore,
    private readonly scheduler: RunScheduler,
    private readonly decisions: DecisionService,
    private readonly metrics: Metrics,
    private readonly logger: Logger,
  ) {}

  /** Handles the job when it is a timer; false when it is not one (an iteration). */
  async handle(job: Job): Promise<boolean> {
    if (job.name === 'expire') {
      const expire = ExpireJobSchema.safeParse(job.data);
      if (!expire.success) throw new UnrecoverableError(`malformed expire job: ${expire.error.message}`);
      await this.decisions.expire(expire.data.runId, expire.data.iteration);
      return true;
    }
    if (job.name === 'summary_deadline') {
      const due = SummaryDeadlineJobSchema.safeParse(job.data);
      if (!due.success) throw new UnrecoverableError(`malformed summary_deadline job: ${due.error.message}`);
      await this.summaryDue(due.data.runId, due.data.iteration, due.data.tv);
      return true;
    }
    return false;
  }

  /** No summary recorded for iteration k at version tv by its deadline: the iteration stops waiting (and prunes). */
  private async summaryDue(runId: string, k: number, tv: number): Promise<void> {
    const st = await this.store.load(runId);
    if (!st || isTerminalStatus(st.status) || st.iteration !== k || st.phase !== 'model' || st.tv !== tv) return;
    if (!(await this.scheduler.releaseChild(QUEUES.compressor, compressJobId(runId, k, tv)))) return;
    this.metrics.compressions.inc({ strategy: 'summarize', outcome: 'timeout' });
    this.logger.warn(
      { runId, iteration: k },
      'no summary was recorded before its deadline (is a compressor running?): the iteration prunes instead',
    );
  }
}
