// Compiled with `tsc --noEmit -p test` by scripts/test.sh: the declarations describe the
// API as the tests use it. Not run.
import {
  CircuitBreaker, CircuitOpenError, Rejected, classifyError, configFields, initSync, retryAfter,
  type ClockError, type FleetAnnouncement, type Retries, type RetryNext, type RetryPolicy, type FleetApplied, type FleetStatus, type ListenerError, type Metrics, type Outcome, type Permit, type Reconfigured, type State, type Transition,
} from 'tripgate';

const breaker = new CircuitBreaker({ failureThreshold: 3, cooldownMs: 5_000, faultStatuses: [408, 503], clock: () => performance.now() });
const permit: Permit = breaker.acquire();
if (permit === Rejected.OPEN) {
  const retry: number | undefined = breaker.lastRejection?.retryAfterMs;
  void retry;
} else if (permit >= 0) {
  const cls: 'success' | 'fault' | 'neutral' = breaker.record(permit, 503);
  void cls;
}
breaker.record(breaker.acquire(), { grpc: 14 });
breaker.record(breaker.acquire(), 'connection-error');
const outcome: Outcome = classifyError(new Error('x'));
void outcome;
const state: State = breaker.state;
const metrics: Metrics = breaker.metrics();
void state; void metrics.rejectedTotal.probing;
breaker.on('open', (t: Transition) => void t.reason).off('open', () => {});
breaker.on('clock-error', (problem: ClockError) => void problem.reading);
const clockErrors: number = metrics.clockErrorsTotal;
void clockErrors;
breaker.on('listener-error', (report: ListenerError) => void [report.error, report.event, report.payload]);
const listenerErrors: number = metrics.listenerErrorsTotal;
void listenerErrors;
const option: string = configFields[0].option;
void option;
breaker.record(breaker.acquire(), { status: '503' });
const reconfigured: Reconfigured = breaker.reconfigure({ failureThreshold: 4, cooldownMs: 5_000 });
const entered: State[] = reconfigured.transitions.map((t) => t.to);
void reconfigured.windowKept; void entered;
// @ts-expect-error: reconfigure takes the constructor's options
breaker.reconfigure({ threshold: 4 });

// Shadow mode and the upstream's stay-away.
const shadowed = new CircuitBreaker({ shadow: true });
shadowed.reconfigure({ shadow: false });
// @ts-expect-error: shadow is a boolean
void new CircuitBreaker({ shadow: 1 });
const shadowPermit: Permit = shadowed.acquire();
const isShadow: boolean = CircuitBreaker.isShadow(shadowPermit);
const wouldHaveRejected: number = shadowed.metrics().shadowRejectedTotal.open;
void isShadow; void wouldHaveRejected;
shadowed.record(shadowPermit, 503, { retryAfterMs: 60_000 });
shadowed.record(shadowed.acquire(), new Response(null, { status: 429, headers: { 'retry-after': '30' } }));
const askedMs: number | null = retryAfter.http('120') ?? retryAfter.grpcPushback('250');
const asked: number = retryAfter.of({ status: 503, headers: { 'retry-after': '60' } }, Date.now());
const applies: boolean = retryAfter.applies(503);
void askedMs; void asked; void applies;
// @ts-expect-error: retryAfterMs is a number
shadowed.record(shadowed.acquire(), 503, { retryAfterMs: '60' });

const member = new CircuitBreaker({ fleetQuorum: 2 });
const applied: FleetApplied = member.fleetApply({ generation: 3n, kind: 'open', remainingMs: 1_000 });
const reached: boolean = member.fleetVotes([{ member: '00ff00ff00ff00ff', ageMs: 0 }, { member: 2n, ageMs: 5 }]);
member.fleetStore({ reachable: true, leaseMs: 15_000 });
member.fleetStore({ reachable: false });
const announcement: FleetAnnouncement | null = member.fleetTakeAnnouncement();
const fleet: FleetStatus = member.fleetStatus();
const elsewhere: -5 = Rejected.PROBING_ELSEWHERE;
void applied; void reached; void announcement; void fleet.wantsLease; void elsewhere;
void metrics.rejectedTotal['probing-elsewhere'];
// @ts-expect-error: a fleet event kind is open or close
member.fleetApply({ generation: 1, kind: 'opened' });

// Retries: one per breaker, shared by its callers.
const retries: Retries = breaker.retries({ maxAttempts: 4, baseDelayMs: 100, maxDelayMs: 5_000, budgetPercent: 10, minRetriesPerSecond: 5, seed: 7 });
const policy: RetryPolicy = retries.policy;
const attempts: number = policy.maxAttempts;
retries.deposit();
const next: RetryNext = retries.next(1, breaker.record(breaker.acquire(), 503), 1_000);
const waitMs: number | undefined = next.retry ? next.waitMs : undefined;
const stop: 'answered' | 'attempts' | 'budget' | 'stay-away' | undefined = next.retry ? undefined : next.stop;
void attempts; void waitMs; void stop;
// @ts-expect-error: delays are named with Ms
breaker.retries({ maxDelay: 100 });
// @ts-expect-error: a class is success, fault or neutral
retries.next(1, 'timeout');

async function main(): Promise<void> {
  const response: Response = await breaker.execute((signal) => fetch('http://127.0.0.1/', { signal }), { timeoutMs: 1_000 });
  const value: string | number = await breaker.execute(async () => 1, { fallback: 'cached' });
  const fallbackFn: number = await breaker.execute(async () => 1, { fallback: (e) => (e instanceof CircuitOpenError ? e.retryAfterMs : 0) });
  const retried: Response | null = await breaker.execute((signal) => fetch('http://127.0.0.1/', { signal }),
    { retries: breaker.retries(), signal: AbortSignal.timeout(5_000), timeoutMs: 1_000, fallback: null });
  void response; void value; void fallbackFn; void retried;
  const bytes: Uint8Array = breaker.exportState();
  const restored = CircuitBreaker.importState(bytes, { cooldownMs: 5_000 }, 250);
  restored.dispose();
}
void main;
initSync();

// @ts-expect-error: durations are named with Ms
new CircuitBreaker({ cooldown: 5_000 });
// @ts-expect-error: an outcome is not a boolean
breaker.record(0, true);

import { FleetStore, type FleetStatus as MemberStatus } from 'tripgate/fleet';
async function fleetCheck(): Promise<void> {
  const store = await FleetStore.connect({ url: 'redis://127.0.0.1:6379', key: 'a key of 16 bytes', member: 'pod-1', storeTimeoutMs: 100 });
  const m = store.join('payments', member);
  const s: MemberStatus = m.status();
  void s.counts.ignored.forged; void store.memberId;
  m.on('degraded', ({ degraded }) => void degraded);
  const ready: boolean = await m.ready(1_000);
  void ready;
  await m.leave();
  await store.close();
  // @ts-expect-error: a fleet joins by name
  store.join(member);
}
void fleetCheck;
