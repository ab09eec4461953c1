/*
 * scheduler.pml - model of the daemon's scheduling protocol: N ranks, K
 * collectives (ring allreduce), one ring of bounded FIFOs per communicator,
 * disordered arrival, give-up at slice boundaries and switching between
 * collectives in one global order.
 *
 * Parameters (spin -DNAME=VALUE):
 *   N       ranks, 2..3 (every rank is in every communicator)
 *   K       collectives, 1..3, collective k on communicator k
 *   C       FIFO capacity in chunks (>= 1; the engine needs >= 2)
 *   ROUNDS  rounds of the ring program (the buffer in ROUNDS chunks)
 *   L, S    failed attempts before giving up: head, others (>= 1)
 * Variants:
 *   SHARE       collectives 0 and 1 share communicator 0 (K = 3: two comms)
 *   SERIAL      no switching: a rank runs its collectives in its own arrival
 *               order, each to the end (expected to deadlock)
 *   ANY_ON_COMM broken rule: a younger collective of a communicator may run
 *               before the older one (expected to mix up slices; with SHARE)
 *   BUSY        back-off restarts the walk at once (busy loop, the real
 *               daemon); default: back-off sleeps until one of the rank's
 *               runnable steps can move, so a deadlock is an end state
 *   EARLY       every collective is posted (in any order) before the
 *               daemons start: a smaller state space for 3 ranks
 *   PROGRESS    progress labels after each slice move (pan -l)
 *   DIRECT      a plan with several connections per rank instead of the ring
 *               (N = 3): send to r+1, send to r+2, receive from r-1,
 *               receive from r-2, each round; one FIFO per ordered pair
 *   NET         rank N-1 is on another node: what it sends goes into a
 *               shadow FIFO of C slots in its own memory, and a relay (the
 *               network and its pump) moves each slice into the receiver's
 *               FIFO whenever that has room, after any delay
 *   GRAPH       each collective is a dependency graph run by the
 *               dependency-driven executor (exec_graph.h), several steps in
 *               flight per rank: a ring allgather written receives first,
 *               B: receive from r-1, D: receive from r-1 what r-1 forwards,
 *               A: send own chunk to r+1, C: forward what B received to r+1
 *               (C depends on B); connection r-1 -> r carries B, D and
 *               connection r -> r+1 carries A, C, each round, in that order
 *   CHAIN       with GRAPH: the steps in program order instead (B, D, A, C
 *               round by round; expected to deadlock)
 *   LTL         adds the claim <> all_done (check with pan -a -f)
 *
 * Abstractions: a step moves one slice (chunk); checking readiness and
 * moving it is one indivisible transition (only this rank can take away its
 * own readiness: others only fill its input or drain its output); time
 * budgets are counts of failed attempts, and the give-up may come after any
 * count in [1, budget] (adaptive budgets); priorities and communicator keys
 * are folded into one global order, the collective's index.
 */

#ifndef N
#define N 2
#endif
#ifndef K
#define K 2
#endif
#ifndef C
#define C 2
#endif
#ifndef ROUNDS
#define ROUNDS 1
#endif
#ifndef L
#define L 3
#endif
#ifndef S
#define S 1
#endif

#if defined(DIRECT) || defined(GRAPH)
#define NSTEPS   4
#else
/* ring allreduce: send, (N-2) x recvReduceSend, recvReduceCopySend,
 * (N-2) x recvCopySend, recv */
#define NSTEPS   (2 * N - 1)
#endif
#define T        (ROUNDS * NSTEPS)          /* slices one rank moves */
#define ALLMASK  ((1 << K) - 1)

#ifdef SHARE
#define NCOMM        (K - 1)
#define COMM(k)      ((k) == 0 -> 0 : (k) - 1)
#define PRED_ARR(r, k)  ((k) != 1 || ARR(r, 0))
#define PRED_DONE(r, k) ((k) != 1 || DONE(r, 0))
#else
#define NCOMM        K
#define COMM(k)      (k)
#define PRED_ARR(r, k)  1
#define PRED_DONE(r, k) 1
#endif

#define POS(r, k)     pos[(r) * K + (k)]
#ifdef GRAPH
/* rounds moved by step s (0: B, 1: D, 2: A, 3: C) of collective k on rank r */
#define GP(r, k, s)   gpos[((r) * K + (k)) * 4 + (s)]
#define GSUM(r, k)    (GP(r, k, 0) + GP(r, k, 1) + GP(r, k, 2) + GP(r, k, 3))
#define DONE(r, k)    (GSUM(r, k) == 4 * ROUNDS)
#else
#define DONE(r, k)    (POS(r, k) == T)
#endif
#define ARR(r, k)     ((arrived[r] >> (k)) & 1)
#define STEP(r, k)    (POS(r, k) % NSTEPS)
/* fifo[(comm * N + from) * N + to]; shadow[comm * N + to]: rank N-1's (NET) */
#define NFIFO         (NCOMM * N * N)
#define FIFO(k, from, to) fifo[(COMM(k) * N + (from)) * N + (to)]
#ifdef DIRECT
#define HASRECV(r, k) (STEP(r, k) >= 2)
#define HASSEND(r, k) (STEP(r, k) < 2)
#define INF(r, k)     FIFO(k, ((r) + N + 1 - STEP(r, k)) % N, r)
#define DEST(r, k)    (((r) + 1 + STEP(r, k)) % N)
/* the sender sent it at its step STEP - 2 of the same round */
#define EXPECT(r, k)  (POS(r, k) - 2)
#else
#define HASRECV(r, k) (STEP(r, k) > 0)
#define HASSEND(r, k) (STEP(r, k) < NSTEPS - 1)
#define INF(r, k)     FIFO(k, ((r) + N - 1) % N, r)
#define DEST(r, k)    (((r) + 1) % N)
#define EXPECT(r, k)  (POS(r, k) - 1)
#endif
#ifdef NET
/* the shadows follow the FIFOs in the same array */
#define SHADOW(cm, to) fifo[NFIFO + (cm) * N + (to)]
#define OUTF(r, k)    fifo[((r) == N - 1 -> NFIFO + COMM(k) * N + DEST(r, k) \
                                         : (COMM(k) * N + (r)) * N + DEST(r, k))]
#else
#define OUTF(r, k)    FIFO(k, r, DEST(r, k))
#endif
#ifdef GRAPH
#define GIN(r, k)     FIFO(k, ((r) + N - 1) % N, r)
#define GOUT(r, k)    FIFO(k, r, ((r) + 1) % N)
#ifdef CHAIN
/* program order: unit (round t, step j) moves after every unit before it */
#define GTURN(r, k, j, idx) (GSUM(r, k) == 4 * GP(r, k, j) + (idx))
#else
#define GTURN(r, k, j, idx) 1
#endif
/* each step: units left, its turn on its connection (round, then program
 * order), what it depends on, data or a free slot */
#define ENA_B(r, k) (GP(r, k, 0) < ROUNDS && GP(r, k, 1) == GP(r, k, 0) && \
                     GTURN(r, k, 0, 0) && len(GIN(r, k)) > 0)
#define ENA_D(r, k) (GP(r, k, 1) < ROUNDS && GP(r, k, 0) == GP(r, k, 1) + 1 && \
                     GTURN(r, k, 1, 1) && len(GIN(r, k)) > 0)
#define ENA_A(r, k) (GP(r, k, 2) < ROUNDS && GP(r, k, 3) == GP(r, k, 2) && \
                     GTURN(r, k, 2, 2) && len(GOUT(r, k)) < C)
#define ENA_C(r, k) (GP(r, k, 3) < ROUNDS && GP(r, k, 2) == GP(r, k, 3) + 1 && \
                     GP(r, k, 0) > GP(r, k, 3) && GTURN(r, k, 3, 3) && len(GOUT(r, k)) < C)
#define ENABLED(r, k) (ENA_B(r, k) || ENA_D(r, k) || ENA_A(r, k) || ENA_C(r, k))
#else
/* input present and output slot free */
#define ENABLED(r, k) ((!HASRECV(r, k) || len(INF(r, k)) > 0) && \
                       (!HASSEND(r, k) || len(OUTF(r, k)) < C))
#endif
/* a slice names its collective and the sender's position */
#define TAG(k, p)     ((k) * T + (p))

#ifdef ANY_ON_COMM
#define RUNNABLE(r, k) (ARR(r, k) && !DONE(r, k))
#else
/* only the oldest collective of a communicator is runnable */
#define RUNNABLE(r, k) (ARR(r, k) && !DONE(r, k) && PRED_DONE(r, k))
#endif
#define RE(r, k)          ((k) < K && RUNNABLE(r, k) && ENABLED(r, k))
#define ANY_ENABLED(r)    (RE(r, 0) || RE(r, 1) || RE(r, 2))
#define ANY_RUNNABLE(r)   (((0 < K) && RUNNABLE(r, 0)) || ((1 < K) && RUNNABLE(r, 1)) || \
                           ((2 < K) && RUNNABLE(r, 2)))
#define ALL_MINE_DONE(r)  (((0 >= K) || DONE(r, 0)) && ((1 >= K) || DONE(r, 1)) && \
                           ((2 >= K) || DONE(r, 2)))

#ifdef NET
chan fifo[NFIFO + NCOMM * N] = [C] of { byte };
#else
chan fifo[NFIFO] = [C] of { byte };
#endif
byte pos[N * K];          /* slices moved by collective k on rank r */
#ifdef GRAPH
byte gpos[N * K * 4];     /* GRAPH: rounds moved by each step */
#endif
byte arrived[N];          /* bit k: collective k was posted on rank r */
byte finished;            /* daemons that completed everything */
#ifdef SERIAL
byte aseq[N * K];         /* arrival order on each rank */
byte narr[N];
#endif

#define all_done (finished == N)

#ifdef GRAPH
/* Moves a unit of any step of collective k that may move (the executor
 * takes whichever it finds; all choices are explored). A slice names the
 * sender's step (A: even, C: odd) and round. */
#define MOVE(r, k, t) \
    atomic { \
        ENABLED(r, k) -> \
        if \
        :: ENA_B(r, k) -> GIN(r, k)?t; assert(t == TAG(k, 2 * GP(r, k, 0))); GP(r, k, 0)++ \
        :: ENA_D(r, k) -> GIN(r, k)?t; assert(t == TAG(k, 2 * GP(r, k, 1) + 1)); GP(r, k, 1)++ \
        :: ENA_A(r, k) -> GOUT(r, k)!TAG(k, 2 * GP(r, k, 2)); GP(r, k, 2)++ \
        :: ENA_C(r, k) -> GOUT(r, k)!TAG(k, 2 * GP(r, k, 3) + 1); GP(r, k, 3)++ \
        fi; \
        t = 0 \
    }
#else
/* Moves one slice of collective k on rank r; the guard is its readiness. */
#define MOVE(r, k, t) \
    d_step { \
        ENABLED(r, k) -> \
        if \
        :: HASRECV(r, k) -> INF(r, k)?t; assert(t == TAG(k, EXPECT(r, k))) \
        :: else -> skip \
        fi; \
        if \
        :: HASSEND(r, k) -> OUTF(r, k)!TAG(k, POS(r, k)) \
        :: else -> skip \
        fi; \
        POS(r, k)++; \
        t = 0 \
    }
#endif

/* The application on rank r posts its collectives in any order that keeps
 * each communicator's order, at arbitrary times. */
#ifdef SERIAL
#define POST(r, k) d_step { (k) < K && !ARR(r, k) && PRED_ARR(r, k) -> \
                            arrived[r] = arrived[r] | (1 << (k)); \
                            aseq[(r) * K + narr[r]] = k; narr[r]++ }
#else
#define POST(r, k) d_step { (k) < K && !ARR(r, k) && PRED_ARR(r, k) -> \
                            arrived[r] = arrived[r] | (1 << (k)) }
#endif

#define POST_ANY(r) \
    if \
    :: POST(r, 0) \
    :: POST(r, 1) \
    :: POST(r, 2) \
    fi

proctype App(byte r)
{
    POST_ANY(r);
#if K > 1
    POST_ANY(r);
#endif
#if K > 2
    POST_ANY(r)
#endif
}

#ifdef NET
/* The network between rank N-1's shadow FIFO towards rank `to` and that
 * rank's FIFO: moves a slice whenever one is waiting and there is room, at
 * any time (its delay is any interleaving). It never takes readiness away
 * from a step: it only drains the sender's output and fills the receiver's
 * input. */
proctype Relay(byte cm; byte to)
{
    byte t;
end:
    do
    :: d_step { len(SHADOW(cm, to)) > 0 && len(fifo[(cm * N + N - 1) * N + to]) < C ->
                SHADOW(cm, to)?t; fifo[(cm * N + N - 1) * N + to]!t; t = 0 }
    od
}
#endif

#ifndef SERIAL

#if L > 1 || S > 1
#define BUDGETS
#endif

/* Scans from c for the next runnable collective in the global order; K when
 * there is none. */
#define SCAN(r) \
    do \
    :: c < K && !RUNNABLE(r, c) -> c++ \
    :: else -> break \
    od

#ifdef BUDGETS
#define RESET_BUDGET(h) head = h; tries = 0
#else
#define RESET_BUDGET(h) skip
#endif

/* A pass starts at the head: the first runnable collective in the order.
 * c == K: nothing runnable (idle). */
#define NEWPASS(r) c = 0; SCAN(r); RESET_BUDGET(true)

#define BACKOFF (K + 1)

/* The preemptive daemon. The real one restarts at the head after a pass
 * that moved something and backs off first after a pass that did not; here
 * the end of every pass waits until one of the rank's runnable steps can
 * move (or, with BUSY, walks again at once). The two differ only by passes
 * of failed attempts, which change nothing. */

proctype Daemon(byte r)
{
    byte c;        /* collective being attempted; K: idle; BACKOFF */
    byte t;
#ifdef BUDGETS
    byte tries;    /* failed attempts on c in a row */
    bool head;     /* c is the head of the pass: long budget */
#endif

    d_step { NEWPASS(r) };
    do
    :: c < K && ENABLED(r, c) ->
        /* moves a slice; keeps the core while it progresses (stickiness);
         * a finished collective leaves the list and the walk starts again */
        MOVE(r, c, t);
#ifdef PROGRESS
progress:
        skip;
#endif
        d_step {
#ifdef BUDGETS
            tries = 0;
#endif
            if
            :: DONE(r, c) -> NEWPASS(r)
            :: else -> skip
            fi
        }
#ifdef BUDGETS
    :: c < K && !ENABLED(r, c) && tries + 1 < (head -> L : S) ->
        tries++                         /* failed attempt: no effect, retry */
#endif
    :: c < K && !ENABLED(r, c) ->
        /* gives up (budget spent, or a smaller adapted budget) and switches
         * to the next runnable collective */
        d_step {
            c++; SCAN(r); RESET_BUDGET(false);
            if
            :: c < K -> skip
            :: else ->                  /* end of the pass */
#ifdef BUSY
                NEWPASS(r)              /* (backs off and) walks again */
#else
                c = BACKOFF             /* waits until something can move */
#endif
            fi
        }
#ifndef BUSY
    :: c == BACKOFF && ANY_ENABLED(r) -> d_step { NEWPASS(r) }
#endif
    :: atomic { c == K && ALL_MINE_DONE(r) -> finished++; c = 0 }; break
    :: c == K && ANY_RUNNABLE(r) ->     /* was idle, sleeping on the queue */
        d_step { NEWPASS(r) }
    od
}

#else /* SERIAL: one collective at a time, in this rank's arrival order */

proctype Daemon(byte r)
{
    byte i, c, t;

    do
    :: i < K ->
        narr[r] > i;                    /* sleeps on the queue */
        c = aseq[r * K + i];
        do
        :: MOVE(r, c, t);
#ifdef PROGRESS
progress:
            skip;
#endif
            if
            :: DONE(r, c) -> break
            :: else -> skip
            fi
#ifdef BUSY
        :: !ENABLED(r, c) -> skip       /* backs off and retries */
#endif
        od;
        i++
    :: else -> break
    od;
    atomic { finished++; i = 0; c = 0 }
}

#endif

init
{
    byte r;

#ifdef EARLY
    /* every collective is posted, in any order, before the daemons start */
    atomic {
        r = 0;
        do
        :: r < N -> run App(r); r++
        :: else -> break
        od;
        r = 0
    }
    do
    :: r < N -> arrived[r] == ALLMASK; r++
    :: else -> break
    od;
    atomic {
        r = 0;
        do
        :: r < N -> run Daemon(r); r++
        :: else -> break
        od;
        r = 0
    }
#else
    atomic {
        r = 0;
        do
        :: r < N -> run App(r); run Daemon(r); r++
        :: else -> break
        od;
        r = 0
    }
#endif
#ifdef NET
    atomic {
        r = 0;
        do
        :: r < NCOMM * N -> run Relay(r / N, r % N); r++
        :: else -> break
        od;
        r = 0
    }
#endif
    all_done;
    /* every slice sent was received by its own collective */
    do
    :: r < NFIFO -> assert(len(fifo[r]) == 0); r++
    :: else -> break
    od
#ifdef NET
    ;
    r = 0;
    do
    :: r < NCOMM * N -> assert(len(fifo[NFIFO + r]) == 0); r++
    :: else -> break
    od
#endif
}

#ifdef LTL
ltl eventually_done { <> all_done }
#endif
