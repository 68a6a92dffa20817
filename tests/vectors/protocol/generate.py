"""Writes the fleet protocol vectors (tests/vectors/protocol/*.json): each a member's
scripted inputs (store up/down, replies, messages, breaker calls, ticks) and the command
and state the core's member protocol must come to after each. Signed lines and votes are
made here with HMAC-SHA256, independently of any adapter. Run: python3 generate.py."""
import json, hmac, hashlib, os
OUT=os.path.dirname(os.path.abspath(__file__))
KEY='a fleet key of 32 bytes, shared!'
ME='00000000000000aa'; OTHER='00000000000000bb'
# This member's session, and so the lease's holder: its id and session.
SESSION='00000000000000f1'; HOLDER=ME+SESSION
def mac(body, key=KEY): return hmac.new(key.encode(), body.encode(), hashlib.sha256).hexdigest()
def line(name, gen, kind, ms, origin, key=None):
    body=f"tripgate1 {name} {gen} {kind} {ms} {origin}"
    return f"{body} {mac(body,key) if key else '-'}"
def vote(name, member, gen, key=None):
    body=f"tripgate1 vote {name} {member} {gen}"
    return f"{member} {gen} {mac(body,key) if key else '-'}"
# The Redis call of each command (FLEET.md, wit/fleet.md): the script, its KEYS and ARGV
# in the order the script reads them, as every adapter sends it (not on a Cluster: there
# the scripts publish with SPUBLISH). Written here from the scripts' headers, apart from
# the core's Command::call, which the runners check against it.
MAX_LINE, MAX_VOTES = 512, 64
def call_of(command, fleet):
    k=lambda suffix: f"tripgate:{{{fleet}}}:{suffix}"
    (kind, f), = command.items()
    if kind=="read": return {"script":"read","keys":[k("event"),k("gen")],"args":[str(MAX_LINE)]}
    if kind=="vote": return {"script":"vote","keys":[k("votes")],"args":[f["entry"],str(max(1,f["window-ms"])),str(MAX_VOTES),str(MAX_LINE)]}
    if kind=="next-generation": return {"script":"INCR","keys":[k("gen")],"args":[]}
    if kind=="publish": return {"script":"publish","keys":[k("event"),k("votes"),k("waiters")],"args":[k("events"),f["line"],str(f["expire-ms"] or 0),"PUBLISH"]}
    if kind=="take-lease": return {"script":"take","keys":[k("lease"),k("waiters")],"args":[f["holder"],str(max(1,f["ms"]))]}
    if kind=="renew-lease": return {"script":"renew","keys":[k("lease")],"args":[f["holder"],str(max(1,f["ms"]))]}
    if kind=="release-lease": return {"script":"release","keys":[k("lease"),k("waiters")],"args":[f["holder"],k("events"),f["notice"],"PUBLISH",k("wake:")]}
    if kind=="repair": return {"script":"repair","keys":[k("gen")],"args":[str(f["floor"])]}
    raise ValueError(kind)
def with_calls(steps, fleet):
    for st in steps:
        c=st.get("expect",{}).get("command")
        if c: st["expect"]["call"]=call_of(c, fleet)
    return steps
def write(n, name, description, spec, config, member, steps):
    steps=with_calls(steps, member["name"])
    v={"name":f"{n:02d}-{name}","description":description,"spec":spec,"config":config,"member":member,"steps":steps}
    open(f"{OUT}/{n:02d}-{name}.json",'w').write(json.dumps(v,indent=1)+"\n")
def S(at, op, expect=None, **kw):
    d={"at":at,"op":op}; d.update(kw)
    if expect is not None: d["expect"]=expect
    return d
def free(gen, origin=ME, key=None): return line("payments", gen, "free", 0, origin, key)
def mem(key=None, interval=1000):
    m={"name":"payments","id":ME,"session":SESSION,"reconcile-interval-ms":interval}
    if key: m["key"]=key
    return m
READ={"read":{}}
FREE1=None  # set below: the member's lease-free notice at generation 1
def trip(at, n=5, outcome="status:503"):
    st=[]
    for i in range(n):
        st.append(S(at,"acquire",permit=f"t{i}"))
        st.append(S(at,"record",permit=f"t{i}",outcome=outcome))
    return st

# 1
cfg={"fleet-quorum":1,"cooldown-ms":5000}
write(1,"reconcile-first-then-follow",
 "After the store comes up the member reads the fleet's state back before anything else; a stored open is applied for the least of its TTL and its signed remaining time; the next read is due one reconcile interval later; a message newer than the member's generation is applied.",
 ["FLEET.md 7: store down = local breaker","FLEET.md 13: the store can't hold the fleet hostage"],
 cfg, mem(),
 [S(0,"up",{"command":READ,"degraded":False}),
  S(0,"reply",{"command":None,"state":"open","generation":3,"cooldown-remaining-ms":2000,"deadline-ms":1000,"counts":{"applied":1,"reconciles":1}},
    reply={"read":{"event":line("payments",3,"open",4500,OTHER),"event-ttl-ms":2000,"generation":"3"}}),
  S(1000,"tick",{"command":READ}),
  S(1000,"reply",{"command":None,"deadline-ms":2000},reply={"read":{"event":line("payments",3,"open",4500,OTHER),"event-ttl-ms":1000,"generation":"3"}}),
  S(1500,"message",{"command":None,"state":"closed","generation":4,"counts":{"received":1,"applied":2}},line=line("payments",4,"close",0,OTHER)),
  S(1600,"message",{"command":None,"counts":{"received":2,"stale":1}},line=line("payments",4,"close",0,OTHER)),
 ])

# 2
st=[S(0,"up",{"command":READ}), S(0,"reply",{"command":None},reply={"read":{"event-ttl-ms":-2}})]
st+=trip(100)
st+=[S(100,"changed",{"command":{"vote":{"entry":vote("payments",ME,0),"window-ms":5000}},"state":"open"}),
 S(101,"reply",{"command":{"next-generation":{}}},reply={"voted":{"now-ms":1000000,"votes":[[vote("payments",ME,0),1000000]]}}),
 S(102,"reply",{"command":{"publish":{"line":line("payments",1,"open",4998,ME),"expire-ms":4998}}},reply={"generation":1}),
 S(103,"reply",{"command":None,"counts":{"published":1}},reply={"published":{}}),
 S(110,"message",{"command":None,"generation":1,"state":"open","cooldown-remaining-ms":4990,"counts":{"received":1,"stale":0}},line=line("payments",1,"open",4998,ME)),
]
write(2,"a-trip-votes-and-opens-the-fleet-at-quorum",
 "A local trip is a vote; with the quorum reached the member asks for a generation and publishes an open for what is left of its own opening (rounded up to whole ms), stored for as long, and takes that generation as it sends it: its own message, and its own stored open read back after its cooldown ran out, are no news and move it nowhere.",
 ["FLEET.md 2: one trip opens the fleet","FLEET.md 4: fencing","FLEET.md 6: quorum"], cfg, mem(), st)

# 3 signed quorum of two
cfg3={"fleet-quorum":2,"cooldown-ms":5000}
st=[S(0,"up",{"command":READ}), S(0,"reply",{"command":None},reply={"read":{"event-ttl-ms":-2}})]
st+=trip(100)
good=vote("payments",ME,0,KEY)
st+=[S(100,"changed",{"command":{"vote":{"entry":good,"window-ms":5000}}}),
 S(101,"reply",{"command":None,"counts":{"unsigned":1,"forged":1,"garbage":1}},reply={"voted":{"now-ms":50000,"votes":[
   [good,50000],
   [vote("payments","00000000000000cc",0),49000],
   [vote("payments","00000000000000dd",0,"another key entirely, 32 bytes!"),49000],
   ["ZADD-junk",49000],
   [good,48000]]}}),
]
# a later trip vote (breaker re-trips after cooldown? simpler: fresh vote reply on a new trip is hard) — check nothing published
write(3,"votes-cannot-be-forged-and-a-member-counts-once",
 "With a shared key, a vote is counted only with its mac: a made-up member id without one, a vote signed with another key and a junk entry are ignored and counted, and a member's own vote twice is one vote, so a quorum of two is not reached by one broken member.",
 ["FLEET.md 6: quorum against poisoning","FLEET.md 13: votes can't be forged"], cfg3, mem(KEY), st)

# 4 signed quorum of two reached by a real second member
st=[S(0,"up",{"command":READ}), S(0,"reply",{"command":None},reply={"read":{"event-ttl-ms":-2}})]
st+=trip(100)
st+=[S(100,"changed",{"command":{"vote":{"entry":good,"window-ms":5000}}}),
 S(101,"reply",{"command":{"next-generation":{}}},reply={"voted":{"now-ms":50000,"votes":[[good,50000],[vote("payments",OTHER,0,KEY),47000]]}}),
 S(102,"reply",{"command":{"publish":{"line":line("payments",1,"open",4998,ME,KEY),"expire-ms":4998}}},reply={"generation":1}),
 S(103,"reply",{"command":None},reply={"published":{}}),
]
write(4,"a-signed-quorum-of-two-opens-the-fleet",
 "Two members' signed votes within one cooldown reach a quorum of two: the member publishes a signed open.",
 ["FLEET.md 6: quorum against poisoning"], cfg3, mem(KEY), st)

FREE1=free(1)
FREE2=free(2)  # the holder's notice once it published its close (generation 2)
# 5 idle member never takes the lease; demand takes it; release when no probe out
cfg5={"fleet-quorum":1,"cooldown-ms":1000,"probe-timeout-ms":3000,"half-open-required-successes":2}
st=[S(0,"up",{"command":READ}),
 S(0,"reply",{"command":None,"state":"open"},reply={"read":{"event":line("payments",1,"open",1000,OTHER),"event-ttl-ms":1000,"generation":"1"}}),
 S(1000,"tick",{"command":READ,"state":"half-open"}),
 S(1000,"reply",{"command":None,"deadline-ms":2000},reply={"read":{"event-ttl-ms":-2,"generation":"1"}}),
 S(1500,"changed",{"command":None}),
 S(1600,"acquire",{"command":None},admitted=False),
 S(1600,"changed",{"command":{"take-lease":{"holder":HOLDER,"ms":3000}}}),
 S(1601,"reply",{"command":None,"lease-held":True,"breaker-lease":True,"deadline-ms":2000,"counts":{"leases":1}},reply={"lease":{"held":True}}),
 S(1700,"acquire",{"command":None},permit="p1",admitted=True),
 S(1700,"changed",{"command":None}),
 S(1800,"record",{"command":None},permit="p1",outcome="success"),
 S(1800,"changed",{"command":None,"lease-held":True,"breaker-lease":True,"deadline-ms":2000}),
 S(1900,"acquire",{"command":None},permit="p2",admitted=True),
 S(1950,"record",{"command":None,"state":"closed"},permit="p2",outcome="success"),
 S(1950,"changed",{"command":{"next-generation":{}},"breaker-lease":False}),
 S(1951,"reply",{"command":{"publish":{"line":line("payments",2,"close",0,ME),"expire-ms":None}}},reply={"generation":2}),
 S(1952,"reply",{"command":{"release-lease":{"holder":HOLDER,"notice":FREE2}},"counts":{"published":1}},reply={"published":{}}),
 S(1953,"reply",{"command":None,"lease-held":False},reply={"released":{}}),
]
write(5,"the-lease-goes-to-a-member-with-a-call-and-its-round-ends-in-it",
 "In half-open a member with no call to probe with never asks for the fleet's probe lease; a caller turned away for the want of it makes the member ask; the holder keeps the lease while its probes come, so both successes the round needs are counted in one breaker: it closes, publishes the fleet's close, then gives the lease back.",
 ["FLEET.md 3: one probe round fleet-wide","FLEET.md 12: recovery never waits on an idle member"], cfg5, mem(), st)

# 6 holder with no probe gives it back at a third of the lease; renews while a probe is out
st=[S(0,"up",{"command":READ}),
 S(0,"reply",{"command":None},reply={"read":{"event":line("payments",1,"open",1000,OTHER),"event-ttl-ms":1000,"generation":"1"}}),
 S(1000,"acquire",{"command":None},admitted=False),
 S(1000,"changed",{"command":{"take-lease":{"holder":HOLDER,"ms":3000}}}),
 S(1000,"reply",{"command":None,"lease-held":True,"deadline-ms":2000},reply={"lease":{"held":True}}),
 S(2000,"tick",{"command":{"release-lease":{"holder":HOLDER,"notice":FREE1}},"breaker-lease":False}),
 S(2001,"reply",{"command":None},reply={"released":{}}),
]
write(6,"a-holder-that-no-probe-came-to-gives-the-lease-back",
 "A member that took the lease but admitted no probe within a third of it gives it back instead of renewing it.",
 ["FLEET.md 12: recovery never waits on an idle member"], cfg5, mem(interval=60000), st)

st=[S(0,"up",{"command":READ}),
 S(0,"reply",{"command":None},reply={"read":{"event":line("payments",1,"open",1000,OTHER),"event-ttl-ms":1000,"generation":"1"}}),
 S(1000,"acquire",{"command":None},admitted=False),
 S(1000,"changed",{"command":{"take-lease":{"holder":HOLDER,"ms":3000}}}),
 S(1000,"reply",{"command":None,"lease-held":True},reply={"lease":{"held":True}}),
 S(1100,"acquire",{"command":None},permit="p1",admitted=True),
 S(2000,"tick",{"command":{"renew-lease":{"holder":HOLDER,"ms":3000}}}),
 S(2000,"reply",{"command":None,"breaker-lease":True,"deadline-ms":3000},reply={"renewed":True}),
 S(2500,"record",{"command":None},permit="p1",outcome="success"),
 S(2500,"changed",{"command":None,"lease-held":True,"deadline-ms":3000}),
 S(3000,"tick",{"command":{"release-lease":{"holder":HOLDER,"notice":FREE1}},"breaker-lease":False,"state":"half-open"}),
 S(3001,"reply",{"command":None,"lease-held":False},reply={"released":{}}),
]
write(7,"a-lease-is-renewed-while-its-probe-is-out",
 "The holder renews the lease at a third of its length while a probe is out; with its probe back and no other coming for a third of the lease, it gives the lease back though the round needs one more success, so that another member's callers can finish it.",
 ["FLEET.md 3: one probe round fleet-wide"], cfg5, mem(interval=60000), st)

# 8 waiting member asks no sooner than the holder keeps it
st=[S(0,"up",{"command":READ}),
 S(0,"reply",{"command":None},reply={"read":{"event":line("payments",1,"open",1000,OTHER),"event-ttl-ms":1000,"generation":"1"}}),
 S(1000,"acquire",{"command":None},admitted=False),
 S(1000,"changed",{"command":{"take-lease":{"holder":HOLDER,"ms":3000}}}),
 S(1000,"reply",{"command":None,"lease-held":False,"deadline-ms":3500},reply={"lease":{"held":False,"ttl-ms":2500}}),
 S(1100,"acquire",{"command":None},admitted=False),
 S(1100,"changed",{"command":None}),
 S(3500,"tick",{"command":{"take-lease":{"holder":HOLDER,"ms":3000}}}),
 S(3500,"reply",{"command":None,"lease-held":True},reply={"lease":{"held":True}}),
]
write(8,"a-waiting-member-asks-no-sooner-than-the-holder-keeps-the-lease",
 "A member turned down by the store waits for the holder's lease to run out before it asks again, however many of its callers are turned away meanwhile: a waiting member costs the store one command per round, not one per call.",
 ["FLEET.md 14: cheap at scale"], cfg5, mem(interval=60000), st)

# 9 expired lease never leads
cfg9={"fleet-quorum":1,"cooldown-ms":1000,"probe-timeout-ms":3000,"half-open-required-successes":1}
st=[S(0,"up",{"command":READ}),
 S(0,"reply",{"command":None},reply={"read":{"event":line("payments",1,"open",1000,OTHER),"event-ttl-ms":1000,"generation":"1"}}),
 S(1000,"acquire",{"command":None},admitted=False),
 S(1000,"changed",{"command":{"take-lease":{"holder":HOLDER,"ms":3000}}}),
 S(1000,"reply",{"command":None,"lease-held":True},reply={"lease":{"held":True}}),
 S(1100,"acquire",{"command":None},permit="p1",admitted=True),
 S(4500,"record",{},permit="p1",outcome="status:503"),
 S(4500,"changed",{"command":{"release-lease":{"holder":HOLDER,"notice":FREE1}},"state":"open","counts":{"published":0}}),
 S(4501,"reply",{"command":None},reply={"released":{}}),
]
write(9,"a-lease-that-ran-out-leads-nothing",
 "A member frozen past its lease wakes, and its probe's failure re-opens it: the round spoke for nobody (another member may hold the lease), so nothing is voted or published; the store's lease is given back.",
 ["FLEET.md 12: an expired lease never leads"], cfg9, mem(interval=60000), st)

# 10 stored opens without ttl, with huge ttl
cfg10={"fleet-quorum":1,"cooldown-ms":5000}
st=[S(0,"up",{"command":READ}),
 S(0,"reply",{"command":None,"state":"closed","counts":{"applied":0}},reply={"read":{"event":line("payments",998,"open",9000,OTHER),"event-ttl-ms":-1,"generation":"998"}}),
 S(1000,"tick",{"command":READ}),
 S(1000,"reply",{"command":None,"state":"open","cooldown-remaining-ms":5000},reply={"read":{"event":line("payments",998,"open",9000,OTHER),"event-ttl-ms":315360000000,"generation":"998"}}),
]
write(10,"a-stored-open-lasts-no-longer-than-the-member-allows",
 "A stored open without a TTL is absent (the format always gives an open one); one whose TTL is ten years lasts the least of that, its signed remaining time (9 s) and the member's longest opening (its 5 s cooldown).",
 ["FLEET.md 13: the store can't hold the fleet hostage"], cfg10, mem(), st)

# 11 malformed generation repaired, never published past
st=[S(0,"up",{"command":READ}),
 S(0,"reply",{"command":{"repair":{"floor":0}},"counts":{"malformed-generation":1}},reply={"read":{"event-ttl-ms":-2,"generation":"abc"}}),
 S(1,"reply",{"command":None,"counts":{"repairs":1}},reply={"repaired":{}}),
]
st+=trip(100)
st+=[S(100,"changed",{"command":{"vote":{"entry":vote("payments",ME,0),"window-ms":5000}}}),
 S(101,"reply",{"command":{"next-generation":{}}},reply={"voted":{"now-ms":9000,"votes":[[vote("payments",ME,0),9000]]}}),
 S(102,"reply",{"command":{"repair":{"floor":0}},"counts":{"refused":1,"malformed-generation":2}},reply={"refused":{}}),
 S(103,"reply",{"command":{"next-generation":{}}},reply={"repaired":{}}),
 S(104,"reply",{"command":{"repair":{"floor":0}},"counts":{"malformed-generation":3}},reply={"generation":-4}),
 S(105,"reply",{"command":{"next-generation":{}}},reply={"repaired":{}}),
 S(106,"reply",{"command":{"publish":{"line":line("payments",7,"open",4994,ME),"expire-ms":4994}}},reply={"generation":7}),
 S(107,"reply",{"command":None},reply={"published":{}}),
]
write(11,"a-malformed-generation-is-repaired-never-published-past",
 "A generation counter holding no generation (`abc`, a negative number, one the store refuses to increment) is counted and repaired to the member's own generation before the member asks again; nothing is ever published under such a number. A store that refused a command is up: the member does not degrade.",
 ["FLEET.md 13: generations are repaired rather than published past"], cfg10, mem(), st)

# 12 down keeps announcement
st=[S(0,"up",{"command":READ}), S(0,"reply",{"command":None},reply={"read":{"event-ttl-ms":-2}})]
st+=trip(100)
st+=[S(100,"changed",{"command":{"vote":{"entry":vote("payments",ME,0),"window-ms":5000}}}),
 S(200,"down",{"command":None,"degraded":True}),
 S(900,"up",{"command":READ,"degraded":False}),
 S(900,"reply",{"command":{"vote":{"entry":vote("payments",ME,0),"window-ms":5000}}},reply={"read":{"event-ttl-ms":-2}}),
]
write(12,"an-announcement-the-store-missed-goes-out-when-it-is-back",
 "The store goes down while a trip's vote is in flight: the member decides locally (degraded) and keeps the announcement; back, it reads the fleet's state first, then votes, since the breaker is still open.",
 ["FLEET.md 7: store down = local breaker"], cfg10, mem(), st)

# 13 garbage and hostile messages
long_line="tripgate1 payments 9 open 1000 "+"0"*600
st=[S(0,"up",{"command":READ}), S(0,"reply",{"command":None},reply={"read":{"event-ttl-ms":-2}}),
 S(1,"message",{"command":None,"counts":{"garbage":1}},line=long_line),
 S(2,"message",{"command":None,"counts":{"wrong-fleet":1}},line=line("orders",9,"open",1000,OTHER,KEY)),
 S(3,"message",{"command":None,"counts":{"unsigned":1}},line=line("payments",9,"open",1000,OTHER)),
 S(4,"message",{"command":None,"counts":{"forged":1},"state":"closed"},line=line("payments",9,"open",1000,OTHER,"another key entirely, 32 bytes!")),
 S(5,"message",{"command":None,"counts":{"garbage":2}},line="tripgate1 payments 9 open 1000 00000000000000BB "+mac("x")),
 S(6,"message",{"command":None,"state":"open","counts":{"applied":1,"received":6}},line=line("payments",9,"open",1000,OTHER,KEY)),
 S(7,"message",{"command":None,"counts":{"stale":1}},line=line("payments",9,"open",1000,OTHER,KEY)),
]
write(13,"hostile-and-garbage-messages-change-nothing",
 "A line longer than any message is garbage before it is split; another fleet's, unsigned, forged and malformed lines are ignored and counted; a signed one applies once, and its replay is stale.",
 ["FLEET.md 8: bad input from the store","FLEET.md 13: the store can't hold the fleet hostage"], cfg10, mem(KEY), st)

# 14 refused read does not loop
st=[S(0,"up",{"command":READ}),
 S(0,"reply",{"command":None,"deadline-ms":1000,"counts":{"refused":1},"degraded":False},reply={"refused":{}}),
 S(1000,"tick",{"command":READ}),
]
write(14,"a-refused-read-waits-for-the-next-interval",
 "A read the store refuses (a key of the wrong type) is counted, not retried at once, and not an outage: the next read comes one interval later.",
 ["FLEET.md 13: the store can't hold the fleet hostage","FLEET.md 14: cheap at scale"], cfg10, mem(), st)
# 15 a free notice lets a waiting member ask at once
st=[S(0,"up",{"command":READ}),
 S(0,"reply",{"command":None},reply={"read":{"event":line("payments",1,"open",1000,OTHER,KEY),"event-ttl-ms":1000,"generation":"1"}}),
 S(1000,"acquire",{"command":None},admitted=False),
 S(1000,"changed",{"command":{"take-lease":{"holder":HOLDER,"ms":3000}}}),
 S(1000,"reply",{"command":None,"lease-held":False,"deadline-ms":3500},reply={"lease":{"held":False,"ttl-ms":2500}}),
 S(1200,"message",{"command":None,"counts":{"forged":1}},line=free(1,OTHER,"another key entirely, 32 bytes!")),
 S(1300,"message",{"command":None,"counts":{"garbage":1}},line=line("payments",1,"free",5,OTHER,KEY)),
 S(1400,"message",{"command":{"take-lease":{"holder":HOLDER,"ms":3000}},"counts":{"received":3}},line=free(1,OTHER,KEY)),
 S(1401,"reply",{"command":None,"lease-held":True},reply={"lease":{"held":True}}),
 S(1500,"message",{"command":None,"lease-held":True},line=free(1,OTHER,KEY)),
]
write(15,"a-free-notice-lets-a-waiting-member-ask-at-once",
 "A holder that gives the lease back tells the fleet; a member waiting for it asks at once instead of when the holder's lease would have run out. A forged or malformed notice changes nothing, and one that arrives while the member holds the lease is moot.",
 ["FLEET.md 12: recovery never waits on an idle member","FLEET.md 14: cheap at scale"], cfg5, mem(KEY, interval=60000), st)
# 16 the author's own news, late
st=[S(0,"up",{"command":READ}), S(0,"reply",{"command":None},reply={"read":{"event-ttl-ms":-2}})]
st+=trip(100)
st+=[S(100,"changed",{"command":{"vote":{"entry":vote("payments",ME,0),"window-ms":5000}},"state":"open"}),
 S(101,"reply",{"command":{"next-generation":{}}},reply={"voted":{"now-ms":1000000,"votes":[[vote("payments",ME,0),1000000]]}}),
 S(102,"reply",{"command":{"publish":{"line":line("payments",1,"open",4998,ME),"expire-ms":4998}},"generation":1},reply={"generation":1}),
 S(103,"reply",{"command":None,"counts":{"published":1}},reply={"published":{}}),
 # Its cooldown runs out before the store's copy does (the store's clock is its own).
 S(5100,"tick",{"command":READ,"state":"half-open"}),
 S(5101,"reply",{"command":None,"state":"half-open","generation":1,"counts":{"applied":0,"stale":0}},
   reply={"read":{"event":line("payments",1,"open",4998,ME),"event-ttl-ms":40,"generation":"1"}}),
 S(5102,"message",{"command":None,"state":"half-open","counts":{"received":1,"applied":0,"stale":0}},line=line("payments",1,"open",4998,ME)),
 # A second copy is a replay: stale, and counted, and it still moves nothing.
 S(5103,"message",{"command":None,"state":"half-open","counts":{"received":2,"applied":0,"stale":1}},line=line("payments",1,"open",4998,ME)),
]
write(16,"a-members-own-news-never-moves-it-later",
 "A member takes the generation of the event it publishes as it sends it: its breaker already stands there. Its own stored open read back, or its own message delivered late, after its cooldown ran out and it went half-open, neither re-opens it nor counts as stale; a second copy of its message is a replay, counted stale.",
 ["FLEET.md 4: fencing"], cfg, mem(), st)
print("ok")
