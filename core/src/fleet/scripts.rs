//! The store's side of the member protocol: one Lua script per `Command` that needs
//! more than one Redis command, run with `EVALSHA` by every adapter, so that the store
//! does the same for a Rust and a Node member. Each file says its keys, arguments and
//! reply; each treats a key of the wrong type, or holding garbage, as absent or repairs
//! it, so that what is stored can never stop a member (see `FLEET.md`).

/// `Command::Read`: KEYS event, gen; ARGV `MAX_LINE` →
/// {event, PTTL event, gen}.
pub const READ: &str = include_str!("lua/read.lua");
/// `Command::Vote`: KEYS votes; ARGV entry, window ms, `MAX_VOTES`,
/// `MAX_LINE` → {now ms, entry, ms, …}.
pub const VOTE: &str = include_str!("lua/vote.lua");
/// `Command::TakeLease`: KEYS lease, waiters; ARGV holder, ms → {held 0/1, ms left}.
pub const TAKE: &str = include_str!("lua/take.lua");
/// `Command::RenewLease`: KEYS lease; ARGV holder, ms → 0/1.
pub const RENEW: &str = include_str!("lua/renew.lua");
/// `Command::ReleaseLease`: KEYS lease, waiters; ARGV holder, channel, notice, `PUBLISH`
/// or `SPUBLISH`, the members' channel prefix (`Keys::wake`) → 0/1.
pub const RELEASE: &str = include_str!("lua/release.lua");
/// `Command::Repair`: KEYS gen; ARGV floor → the generation held.
pub const REPAIR: &str = include_str!("lua/repair.lua");
/// `Command::Publish`: KEYS event, votes, waiters; ARGV channel, line, ttl ms (0: none),
/// `PUBLISH` or `SPUBLISH` → receivers.
pub const PUBLISH: &str = include_str!("lua/publish.lua");

/// One of the store's scripts, to name it in what an adapter reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Script {
    /// `read.lua`.
    Read,
    /// `vote.lua`.
    Vote,
    /// `take.lua`.
    Take,
    /// `renew.lua`.
    Renew,
    /// `release.lua`.
    Release,
    /// `repair.lua`.
    Repair,
    /// `publish.lua`.
    Publish,
}

impl Script {
    /// Every script.
    pub const ALL: [Self; 7] = [
        Self::Read,
        Self::Vote,
        Self::Take,
        Self::Renew,
        Self::Release,
        Self::Repair,
        Self::Publish,
    ];

    /// Its Lua source.
    pub const fn source(self) -> &'static str {
        match self {
            Self::Read => READ,
            Self::Vote => VOTE,
            Self::Take => TAKE,
            Self::Renew => RENEW,
            Self::Release => RELEASE,
            Self::Repair => REPAIR,
            Self::Publish => PUBLISH,
        }
    }

    /// Its name: the file's, without `.lua` (`take`).
    pub const fn name(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Vote => "vote",
            Self::Take => "take",
            Self::Renew => "renew",
            Self::Release => "release",
            Self::Repair => "repair",
            Self::Publish => "publish",
        }
    }

    /// Its file's name.
    pub const fn file(self) -> &'static str {
        match self {
            Self::Read => "read.lua",
            Self::Vote => "vote.lua",
            Self::Take => "take.lua",
            Self::Renew => "renew.lua",
            Self::Release => "release.lua",
            Self::Repair => "repair.lua",
            Self::Publish => "publish.lua",
        }
    }
}
