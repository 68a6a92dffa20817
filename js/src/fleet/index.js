// tripgate/fleet: breakers in many processes, guarding one upstream, act toward it like
// one breaker, through Redis (FLEET.md; the wire format is wit/fleet.md). A separate entry
// point so that users without fleet mode never load a Redis client; the `redis` package
// (v6) is an optional peer dependency, loaded by `FleetStore.connect`.
//
//   const store = await FleetStore.connect({ url, key, member });   // one per process
//   const fleet = store.join('payments', breaker);                  // one per breaker
//   fleet.status(); await fleet.leave(); await store.close();
//
// Every decision is the core's member protocol (protocol.js); store.js runs its commands
// (commands.js says what each sends).

export { Fleet, FleetStore, StoreTimeoutError } from './store.js';
