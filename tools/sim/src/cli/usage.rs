//! The text of `--help`.

pub const USAGE: &str = "\
mm-sim: replay an arrival trace through the real matchmaking scripts on a
time-compressed redis-server and compare rule sets with FIFO and an oracle.

USAGE: scripts/sim.sh [FLAGS]        (or cargo run --release -p sim -- [FLAGS])

Trace (generated, the default, or read from a file):
  --rate R              arrivals per simulated second            [50]
  --minutes M           length of the trace                      [10]
  --mean X --sd Y       ratings ~ N(X, Y)                        [1500, 300]
  --seed N              random seed                              [7]
  --party-sizes LIST    how many players arrive together, e.g.
                        1:0.6,2:0.25,3:0.15 (size:probability; or
                        0.6,0.25,0.15 for sizes 1, 2, 3); an arrival is
                        a solo join or a whole party    [1:1, solo only]
  --party-sd D          rating sd within a party (each rating stays
                        N(mean, sd); D = sd: independent)        [100]
  --trace FILE.csv      read the trace instead: header time,player,rating
                        or time,player,rating,party (seconds since the
                        start, player id, rating, party label: rows with
                        one label arrive as one party, the first leads),
                        then optionally home, latency:<region> and
                        attr:<name> columns

Attributes (player attributes and match rules, docs/simulator.md#attributes):
  --attributes          the attributes scenario: every player lists game
                        modes (--modes, --modes-listed) and has a level
                        (--levels); each rule set's world runs as written,
                        with every player listing only their first mode
                        (one queue per mode; worlds with an intersection
                        rule) and without its rules; rate 2/s and
                        tools/sim/rules/attributes/ unless given; no
                        FIFO baseline, no oracle
  --modes LIST          give players a stringList attribute `modes`:
                        name:popularity pairs, a player's first choice
                        drawn by popularity, each further one likewise
                        among the rest      [ctf:50,koth:25,dm:15,tdm:10]
  --modes-listed LIST   how many modes a player lists, count:probability
                                               [1:0.4,2:0.3,3:0.3]
  --levels DIST         give players a number attribute `level`:
                        uniform:LO,HI (whole numbers) or normal:MEAN,SD
                        (rounded)                        [uniform:1,100]
  (a --trace brings its own: attr:<name> columns, a|b|c for lists)

Regions (players in geographic clusters, docs/simulator.md#regions):
  --regions             the regions scenario: each player gets a home
                        region (na-east 40 %, na-west 25 %, eu 20 %,
                        asia 10 %, oceania 5 %) and a latency to every
                        region (or the trace's latency:<region> columns);
                        each rule set's world (with a regions rule) runs
                        as written, as one world per region (each player
                        in its lowest-latency region's) and without the
                        rule; rate 20/s and tools/sim/rules/regions/
                        unless given; no FIFO baseline, no oracle
  --geography FILE.json draw the latencies from this model instead
                        (regions, shares, backboneMs, accessMs,
                        jitterMs; tools/sim/geography/)
  --write-trace FILE    also write the trace as CSV (with home and
                        latency:<region> columns when it has latencies)

Ratings (matches played out, docs/simulator.md#ratings):
  --ratings             a population plays match after match: results
                        from hidden true skills (N(--mean, --sd)) go
                        through the result route and move ratings; each
                        rule set's world runs with its rating updates,
                        without (system none) and with ratings known
                        exactly; tools/sim/rules/ratings/ unless given
  --players N           the population                          [1000]
  --games G             stop at G games per player on average     [30]
  --initial-rating X    everyone's rating before any result     [1500]
  --noise B             performance noise per player and game (sd) [150]
  --game-seconds LO,HI  how long a game lasts (uniform)        [20,40]
  --rest LO,HI          rest between a game and the next join    [1,5]

Backfill (running matches ask for players, docs/simulator.md#backfill):
  --backfill            every match is assigned and played; players
                        leave early, the game server requests backfill
                        and renews it; the same trace without backfill
                        (short-handed matches) beside it; rate 20/s,
                        5 minutes and tools/sim/rules/backfill/ unless
                        given
  --leave-probability P each player leaves its match early with P  [0.1]
  --game-seconds LO,HI  (backfill: how long a game lasts)    [[120,240]]
  --renew S             keep-alive renewal every S simulated s      [5]

Block lists (players avoid others, docs/simulator.md#block-lists):
  --blocks              a population (--players, 5000 with --blocks) of
                        players each avoiding a uniform --avoid others;
                        Poisson arrivals draw players not away; each
                        rule set's world runs with the lists written and
                        without block lists; rate 20/s, 10 minutes and
                        tools/sim/rules/blocks/ unless given
  --avoid LO,HI         how many others a player avoids (uniform) [0,20]
  --away LO,HI          a player who arrives is not drawn again for
                        U(LO,HI) simulated s                  [60,240]

Role queues (players offer roles, docs/sim/roles/analysis.md):
  --roles               every arrival is a new player offering a role
                        (tank 15 %, healer 20 %, damage 65 %), some a
                        second one (--two-roles); each rule set's world
                        (with a quota rule) runs as written and without
                        its quota rule (role-agnostic); rate 20/s, 10
                        minutes and tools/sim/rules/roles/ unless given
                        (at 20/s keep --speed at 4 or lower)
  --two-roles P         the share of players offering a second role,
                        uniformly one of the other two          [0.2]

Several queues (one ticket in several worlds, docs/sim/queues/analysis.md):
  --several-queues      every arrival is a new player queuing in 1, 2 or
                        3 worlds of a queueGroup (--queue-mix); each rule
                        set runs with those tickets in all their worlds,
                        with every player in its first world only, and
                        with the single-queue players only; rate 2/s,
                        10 minutes and tools/sim/rules/queues/ unless given
  --queue-mix A,B,C     weights of queuing in 1, 2, 3 worlds     [1,1,1]
  --world-weights A,B,C the worlds' popularity, in the group's order:
                        each player's worlds are drawn by it, one after
                        the other                               [alike]

Matchers:
  --rules PATH          a rule set file (MM_RULES JSON) or a directory of
                        *.json files; repeatable     [tools/sim/rules/]
  --world NAME          the world of each rule set to drive  [its first]
  --team-size N         players per match of every driven world, the
                        FIFO baseline and the oracle
                        [the first rule set's, else 10]
  --ticket-ttl S        ticket lifetime of worlds that set none  [900]
  --instant-match BOOL  MM_INSTANT_MATCH for every rule set      [true]
  --oracle-periods LIST oracle batch periods in seconds [1,2,5,10,20,30,60]

Ready checks (rule sets whose world has a readyCheck):
  --accept-probability LIST  each participant accepts with this probability;
                        one run per value (e.g. 1,0.9,0.7), plus one run
                        of the rule set without its ready check      [1]
  --refusal MODE        who does not accept: decline (at once) or silent
                        (the proposal times out)              [decline]
  --answer-delay LO,HI  each answer comes LO..HI simulated seconds after
                        the proposal (uniform)                     [1,5]

Run:
  --speed X             how much faster than real time redis-server's
                        clock runs (libfaketime)                 [20]
  --drain S             keep ticking S simulated seconds after the last
                        arrival; who is left then is unmatched   [120]
  --in-flight N         joins in flight per rule set             [32]
  --redis-server PATH   the redis-server binary           [redis-server]
  --out DIR             where the report goes [sim-results/<UTC time>]
  --fail-on-miss        exit with status 3 if an acceptance check misses
  -h, --help            this text
";
