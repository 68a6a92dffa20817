//! The process's driver: one tokio task that owns the store connection and runs every
//! member's protocol (`tripgate_core::fleet::protocol`). It only moves bytes: it tells a
//! protocol what happened (a message on its channel, the answer to its command, the store
//! lost or back, its breaker woken, its deadline come), executes the one command the
//! protocol asks for, and sleeps until something happens. Nothing polls: a breaker wakes
//! its member through its [`Watcher`], and time comes from the protocols' deadlines.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures_util::stream::FuturesUnordered;
use futures_util::StreamExt;
use redis::{PushInfo, PushKind, Value};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};
use tokio::sync::Notify;
use tripgate_core::fleet::options::Backoff;
use tripgate_core::fleet::protocol::{Input, Protocol, Reply};
use tripgate_core::fleet::wire::{Keys, Signer};
use tripgate_core::fleet::SharedKey;
use tripgate_core::Nanos;
use tripgate_host::fleet::{Member, MemberLink};
use tripgate_host::Watcher;

use crate::status::{MemberState, Session};
use crate::store::{Answer, Clients, Connection, Scripts, StoreError, StoreResult};

/// A member's place in the driver.
pub(crate) type Slot = u64;

/// What a [`Store`](crate::Store) or [`Fleet`](crate::Fleet) handle asks of the driver.
pub(crate) enum Request {
    Join(Box<Joining>),
    Leave(Slot),
}

/// Whether a member is in its fleet, shared by its [`Fleet`](crate::Fleet) handle and the
/// driver: held while the driver steps the member, so that leaving (which resets the
/// breaker to a local one) never interleaves with a step (which may hand it a lease).
pub(crate) type Gate = Arc<Mutex<bool>>;

thread_local! {
    /// The member this thread is stepping, if any: a listener that drops its member's
    /// `Fleet` from inside the step must not wait for the gate it holds.
    static STEPPING: std::cell::Cell<Slot> = const { std::cell::Cell::new(0) };
}

/// Resets a member's breaker to a local one, once: whoever closes the gate first.
pub(crate) fn leave(gate: &Gate, member: &dyn Member) {
    let mut joined = gate.lock().unwrap_or_else(PoisonError::into_inner);
    if std::mem::replace(&mut *joined, false) {
        // Out of the fleet, the breaker must not wait for a lease nobody will give.
        member.unwatch();
        let _ = member.store(false, None);
    }
}

/// Whether this thread is stepping `slot` (see [`STEPPING`]).
pub(crate) fn stepping(slot: Slot) -> bool {
    STEPPING.with(|s| s.get() == slot)
}

/// A member on its way in.
pub(crate) struct Joining {
    pub(crate) slot: Slot,
    pub(crate) gate: Gate,
    pub(crate) member: Arc<dyn Member>,
    pub(crate) protocol: Protocol,
    pub(crate) state: Arc<Mutex<MemberState>>,
    pub(crate) woken: Arc<AtomicBool>,
    pub(crate) watcher: Arc<Watcher>,
}

/// The members their breakers woke since the driver last looked.
#[derive(Default)]
pub(crate) struct Wakes {
    queue: Mutex<Vec<Slot>>,
    notify: Notify,
}

impl Wakes {
    /// Called from a breaker's call (through its watcher): quick, and never blocks on the
    /// driver.
    pub(crate) fn wake(&self, slot: Slot) {
        self.queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(slot);
        self.notify.notify_one();
    }

    fn take(&self) -> Vec<Slot> {
        std::mem::take(&mut *self.queue.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// What the driver was configured with.
pub(crate) struct Config {
    pub(crate) clients: Clients,
    pub(crate) signer: Option<SharedKey>,
    pub(crate) store_timeout: Duration,
    pub(crate) max_backoff: Nanos,
    pub(crate) member_id: u64,
}

struct Entry {
    gate: Gate,
    member: Arc<dyn Member>,
    protocol: Protocol,
    keys: Arc<Keys>,
    state: Arc<Mutex<MemberState>>,
    woken: Arc<AtomicBool>,
    watcher: Arc<Watcher>,
    /// The deadline this member has in the timer heap.
    scheduled: Option<Nanos>,
}

impl Drop for Entry {
    /// Out of the fleet (left, or the driver ended), the breaker is a local one.
    fn drop(&mut self) {
        leave(&self.gate, &*self.member);
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .connected = false;
    }
}

/// The store connection's state.
enum Link {
    /// Waiting to try again at this instant.
    Down {
        retry_at: Nanos,
    },
    /// A connection is being made.
    Connecting,
    Up(Connection),
}

/// What an I/O the driver started came to.
enum Done {
    Connected {
        epoch: u64,
        result: StoreResult<(Connection, UnboundedReceiver<PushInfo>, Option<String>)>,
    },
    Subscribed {
        epoch: u64,
        slot: Slot,
        result: StoreResult<()>,
    },
    Answered {
        epoch: u64,
        slot: Slot,
        result: StoreResult<Answer>,
    },
    /// A leaving member's last words (its lease given back, its channel left): nobody
    /// waits for them.
    Quiet,
}

type Io = Pin<Box<dyn Future<Output = Done> + Send>>;

pub(crate) struct Driver {
    config: Config,
    scripts: Arc<Scripts>,
    session: Arc<Session>,
    requests: UnboundedReceiver<Request>,
    wakes: Arc<Wakes>,
    members: HashMap<Slot, Entry>,
    /// Channel → member, to route messages.
    channels: HashMap<String, Slot>,
    link: Link,
    /// Counts connections tried: what an I/O of an older one answers is ignored.
    epoch: u64,
    pushes: UnboundedReceiver<PushInfo>,
    io: FuturesUnordered<Io>,
    timers: BinaryHeap<Reverse<(Nanos, Slot)>>,
    backoff: Backoff,
    start: Instant,
}

impl Driver {
    pub(crate) fn new(
        config: Config,
        session: Arc<Session>,
        requests: UnboundedReceiver<Request>,
        wakes: Arc<Wakes>,
    ) -> Self {
        let backoff = Backoff::new(config.max_backoff, config.member_id);
        Self {
            config,
            scripts: Arc::new(Scripts::new()),
            session,
            requests,
            wakes,
            members: HashMap::new(),
            channels: HashMap::new(),
            link: Link::Down { retry_at: 0 },
            epoch: 0,
            pushes: unbounded_channel().1,
            io: FuturesUnordered::new(),
            timers: BinaryHeap::new(),
            backoff,
            start: Instant::now(),
        }
    }

    fn now(&self) -> Nanos {
        Nanos::try_from(self.start.elapsed().as_nanos()).unwrap_or(Nanos::MAX)
    }

    /// Runs until every handle is gone; then every breaker is left a local one.
    pub(crate) async fn run(mut self) {
        self.connect();
        loop {
            let reconnect = match self.link {
                Link::Down { retry_at } => Some(retry_at),
                _ => None,
            };
            let timer = self.timers.peek().map(|Reverse((at, _))| *at);
            let alarm = match (reconnect, timer) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            let sleep = tokio::time::sleep_until(
                tokio::time::Instant::from_std(self.start)
                    + Duration::from_nanos(alarm.unwrap_or(0)),
            );
            tokio::select! {
                request = self.requests.recv() => match request {
                    Some(request) => self.request(request),
                    None => return,
                },
                () = self.wakes.notify.notified() => {
                    for slot in self.wakes.take() {
                        if let Some(entry) = self.members.get(&slot) {
                            entry.woken.store(false, Ordering::Release);
                            self.step(slot, Input::Changed);
                        }
                    }
                }
                Some(push) = self.pushes.recv() => self.push(push),
                Some(done) = self.io.next(), if !self.io.is_empty() => self.done(done),
                () = sleep, if alarm.is_some() => self.alarm(),
            }
        }
    }

    fn request(&mut self, request: Request) {
        match request {
            Request::Join(joining) => {
                let Joining {
                    slot,
                    gate,
                    member,
                    protocol,
                    state,
                    woken,
                    watcher,
                } = *joining;
                let keys = Arc::new(protocol.keys().clone());
                let wake = protocol.wake_channel();
                self.channels.insert(keys.channel.clone(), slot);
                self.channels.insert(wake.clone(), slot);
                self.members.insert(
                    slot,
                    Entry {
                        gate,
                        member,
                        protocol,
                        keys,
                        state,
                        woken,
                        watcher,
                        scheduled: None,
                    },
                );
                if matches!(self.link, Link::Up(_)) {
                    self.subscribe(slot);
                }
            }
            Request::Leave(slot) => {
                let Some(mut entry) = self.members.remove(&slot) else {
                    return;
                };
                let wake = entry.protocol.wake_channel();
                self.channels.remove(&entry.keys.channel);
                self.channels.remove(&wake);
                if let Link::Up(connection) = &self.link {
                    let mut connection = connection.clone();
                    let (scripts, keys, timeout) = (
                        Arc::clone(&self.scripts),
                        Arc::clone(&entry.keys),
                        self.config.store_timeout,
                    );
                    let signer = self.config.signer.as_ref().map(|s| s as &dyn Signer);
                    let member = Arc::clone(&entry.member);
                    let release = entry.protocol.leave(&mut MemberLink::new(&*member), signer);
                    self.io.push(Box::pin(async move {
                        let _ = connection.unsubscribe(&keys.channel, timeout).await;
                        let _ = connection.unsubscribe(&wake, timeout).await;
                        if let Some(release) = release {
                            let _ = connection.execute(scripts, keys, release, timeout).await;
                        }
                        Done::Quiet
                    }));
                }
            }
        }
    }

    /// Starts a connection.
    fn connect(&mut self) {
        self.epoch = self.epoch.wrapping_add(1);
        self.link = Link::Connecting;
        let (epoch, timeout) = (self.epoch, self.config.store_timeout);
        let clients = self.config.clients.clone();
        self.io.push(Box::pin(async move {
            let (pushes, received) = unbounded_channel();
            let result = match clients.connect(pushes, timeout).await {
                Ok(mut connection) => {
                    let warning = connection.eviction_warning(timeout).await;
                    Ok((connection, received, warning))
                }
                Err(e) => Err(e),
            };
            Done::Connected { epoch, result }
        }));
    }

    fn subscribe(&mut self, slot: Slot) {
        let (Link::Up(connection), Some(entry)) = (&self.link, self.members.get(&slot)) else {
            return;
        };
        let mut connection = connection.clone();
        // The fleet's channel, and this member's own, where a holder's release wakes it
        // alone.
        let channels = [entry.keys.channel.clone(), entry.protocol.wake_channel()];
        let (epoch, timeout) = (self.epoch, self.config.store_timeout);
        self.io.push(Box::pin(async move {
            let mut result = Ok(());
            for channel in &channels {
                result = connection.subscribe(channel, timeout).await;
                if result.is_err() {
                    break;
                }
            }
            Done::Subscribed {
                epoch,
                slot,
                result,
            }
        }));
    }

    fn done(&mut self, done: Done) {
        match done {
            Done::Connected { epoch, result } if epoch == self.epoch => match result {
                Ok((connection, pushes, warning)) => {
                    self.link = Link::Up(connection);
                    self.pushes = pushes;
                    self.backoff.up(self.now());
                    self.session.began(warning);
                    let slots: Vec<Slot> = self.members.keys().copied().collect();
                    for slot in slots {
                        self.subscribe(slot);
                    }
                }
                Err(error) => self.lost(error),
            },
            Done::Subscribed {
                epoch,
                slot,
                result,
            } if epoch == self.epoch => match result {
                Ok(()) => self.step(slot, Input::Up),
                Err(error) => self.lost(error),
            },
            Done::Answered {
                epoch,
                slot,
                result,
            } if epoch == self.epoch => match result {
                Ok(answer) => self.step(slot, Input::Reply(answer.reply())),
                Err(StoreError::Refused) => self.step(slot, Input::Reply(Reply::Refused)),
                Err(error) => self.lost(error),
            },
            _ => {}
        }
    }

    /// The session is over: every member decides locally, and the driver tries again
    /// after its backoff (which a session that failed at once does not start over).
    fn lost(&mut self, error: StoreError) {
        if matches!(self.link, Link::Down { .. }) {
            return;
        }
        let reason = match error {
            StoreError::Down(reason) => reason,
            StoreError::Refused => "the store refused a command".into(),
            StoreError::Reply(text) => format!("redis: {text}"),
        };
        self.session.lost(reason);
        self.epoch = self.epoch.wrapping_add(1);
        let now = self.now();
        let wait = self.backoff.down(now);
        self.link = Link::Down {
            retry_at: now.saturating_add(wait),
        };
        self.pushes = unbounded_channel().1;
        let slots: Vec<Slot> = self.members.keys().copied().collect();
        for slot in slots {
            self.step(slot, Input::Down);
        }
    }

    fn push(&mut self, push: PushInfo) {
        match push.kind {
            PushKind::Message | PushKind::SMessage => {
                let (Some(channel), Some(payload)) = (push.data.first(), push.data.get(1)) else {
                    return;
                };
                let (Value::BulkString(channel), Value::BulkString(payload)) = (channel, payload)
                else {
                    return;
                };
                let slot = std::str::from_utf8(channel)
                    .ok()
                    .and_then(|channel| self.channels.get(channel).copied());
                if let Some(slot) = slot {
                    let payload = payload.clone();
                    self.step(slot, Input::Message(&payload));
                }
            }
            PushKind::Disconnection => self.lost(StoreError::Down(
                "the connection to the store dropped".into(),
            )),
            _ => {}
        }
    }

    /// A deadline or the reconnect time came.
    fn alarm(&mut self) {
        let now = self.now();
        if let Link::Down { retry_at } = self.link {
            if now >= retry_at {
                self.connect();
            }
        }
        while let Some(&Reverse((at, slot))) = self.timers.peek() {
            if at > now {
                break;
            }
            self.timers.pop();
            let due = self
                .members
                .get_mut(&slot)
                .is_some_and(|entry| entry.scheduled.take_if(|s| *s == at).is_some());
            if due {
                self.step(slot, Input::Tick);
            }
        }
    }

    /// Feeds `input` to a member's protocol, then starts the command it asks for, books
    /// its next deadline, and publishes its state.
    fn step(&mut self, slot: Slot, input: Input<'_>) {
        let now = self.now();
        let signer = self.config.signer.as_ref().map(|s| s as &dyn Signer);
        let Some(entry) = self.members.get_mut(&slot) else {
            return;
        };
        let gate = Arc::clone(&entry.gate);
        let joined = gate.lock().unwrap_or_else(PoisonError::into_inner);
        if !*joined {
            // Left: its handle reset the breaker, and its leave request is on its way.
            return;
        }
        STEPPING.with(|s| s.set(slot));
        // A reconfigured breaker's cooldown and probe timeout hold from its next step on.
        let member = &*entry.member;
        entry
            .protocol
            .retune(member.cooldown(), member.probe_timeout());
        let mut link = MemberLink::new(member);
        entry.protocol.handle(input, &mut link, signer, now);
        STEPPING.with(|s| s.set(0));
        drop(joined);
        if let Some(error) = link.into_error() {
            // The breaker cannot answer (a component that could not be replaced): it
            // leaves the fleet, and its handle says why.
            self.session
                .lost(format!("member {}: {error}", entry.keys.channel));
            self.members.remove(&slot);
            return;
        }
        let command = entry.protocol.poll();
        if !entry.protocol.wants_lease() && entry.watcher.rearm() {
            // An ask may have come between the protocol's look and the rearm: look again.
            let asking = entry.member.view().is_ok_and(|v| v.status.wants_lease);
            if asking && !entry.woken.swap(true, Ordering::AcqRel) {
                self.wakes.wake(slot);
            }
        }
        let deadline = entry.protocol.deadline();
        if deadline != entry.scheduled {
            entry.scheduled = deadline;
            if let Some(at) = deadline {
                self.timers.push(Reverse((at, slot)));
            }
        }
        *entry.state.lock().unwrap_or_else(PoisonError::into_inner) = MemberState {
            connected: entry.protocol.synced(),
            lease_held: entry.protocol.lease_held(),
            counts: *entry.protocol.counts(),
        };
        if let (Some(command), Link::Up(connection)) = (command, &self.link) {
            let connection = connection.clone();
            let (scripts, keys) = (Arc::clone(&self.scripts), Arc::clone(&entry.keys));
            let (epoch, timeout) = (self.epoch, self.config.store_timeout);
            self.io.push(Box::pin(async move {
                let result = connection.execute(scripts, keys, command, timeout).await;
                Done::Answered {
                    epoch,
                    slot,
                    result,
                }
            }));
        }
    }
}
