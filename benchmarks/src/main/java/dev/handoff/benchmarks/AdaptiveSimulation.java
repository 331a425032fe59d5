// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks;

import com.netflix.concurrency.limits.Limit;
import com.netflix.concurrency.limits.Limiter;
import com.netflix.concurrency.limits.limit.AIMDLimit;
import com.netflix.concurrency.limits.limit.Gradient2Limit;
import com.netflix.concurrency.limits.limit.GradientLimit;
import com.netflix.concurrency.limits.limit.VegasLimit;
import com.netflix.concurrency.limits.limiter.SimpleLimiter;
import dev.handoff.Acquisition;
import dev.handoff.Semaphore;
import dev.handoff.SemaphoreRejectedException;
import dev.handoff.adaptive.AdaptiveCapacity;
import dev.handoff.adaptive.SampledPermits;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.PriorityQueue;
import java.util.SplittableRandom;

/**
 * The adaptive-capacity simulation: a downstream with a knee, an open-loop load, and every
 * contender in the same run — handoff's {@code AdaptiveCapacity} with its built-in algorithm, each
 * Netflix concurrency-limits {@code Limit} through {@code AdaptiveCapacity}'s bridge, Netflix's own
 * {@code SimpleLimiter} and {@code BlockingLimiter}, and a sweep of static capacities.
 *
 * <p><b>The model.</b> The downstream has {@code c} workers; a call takes 8 to 12 ms (uniform) of
 * one worker's time; calls beyond {@code c} wait in the downstream's FIFO queue, so latency rises
 * past {@code c} in flight. Halfway through the run {@code c} changes (one scenario halves it,
 * one doubles it). Requests arrive open-loop (Poisson, a fixed rate: the load does not slow down
 * when the service does). Each request goes through the contender's limiter: admitted, queued (at
 * most {@code MAX_QUEUE} waiting, for at most {@code QUEUE_TIMEOUT}), or rejected. An admitted
 * call that gets no answer within {@code CALL_TIMEOUT} is dropped by the caller (its permits come
 * back, the downstream still does the work). Goodput is answers within the timeout.
 *
 * <p><b>Virtual time.</b> One thread runs a discrete-event simulation on a virtual clock, which is
 * also the clock every limiter reads ({@code AdaptiveCapacity.Builder.nanoClock},
 * Netflix's {@code AbstractLimiter.Builder.nanoClock}). So the results are the same on every
 * machine and at any load (the random draws come from fixed streams), and a minute of traffic takes a second.
 * Netflix's {@code BlockingLimiter} parks threads on a monitor, which a one-thread simulation
 * cannot do: its wait loop is modelled exactly as written (on each release every waiter wakes, and
 * they retry the delegate {@code SimpleLimiter} in an arbitrary order, here random; a new arrival
 * tries before them; each gives up at its timeout), around a real {@code SimpleLimiter}. The other
 * contenders run the libraries' real code.
 */
final class AdaptiveSimulation {

    /** The title and the legend of adaptive-results.md. */
    static final String HEADER = """
            # Adaptive capacity: simulated results

            Written by `AdaptiveSimulation` (see [adaptive limits](adaptive.md)). Every contender limits the same
            load, sent to a downstream with a knee: calls beyond its workers queue (or, in one scenario, every
            call slows down beyond 20 in service). The clock is virtual, so the figures are the same on every
            machine. Goodput is the calls answered within the caller's 100 ms timeout, per second; p50 and p99
            are the calls' latency, "p99 with wait" adds the wait for a permit; "rejected" counts the requests
            the limiter refused (its queue full, or 100 ms waited), "timed out" the admitted calls the caller
            gave up on; "vs best static" compares the goodput with the best fixed limit of a sweep, and
            "converged after change" is how long after the change every later second was healthy (p99 within
            twice the unloaded p99, goodput at least 90% of what the downstream can answer), "never" if that
            did not happen before the end.

            """;

    static final long MS = 1_000_000L;
    static final long QUEUE_TIMEOUT = 100 * MS;
    static final int MAX_QUEUE = 100;
    static final long CALL_TIMEOUT = 100 * MS;
    static final long SERVICE_MIN = 8 * MS;
    static final long SERVICE_MAX = 12 * MS;
    static final long BUCKET = 1_000 * MS;
    static final long TIMELINE_STEP = 100 * MS;

    /** How long a call takes of one worker's time. */
    enum Service {
        /** 8 to 12 ms, uniform. */
        UNIFORM,
        /** Lognormal around a median of 10 ms (sigma 0.5: mean 11.3 ms, p99 32 ms). */
        LOGNORMAL
    }

    /**
     * One run's settings. The downstream's workers follow {@code workerSteps} (equal parts of the
     * run); {@code loadKnee > 0} instead gives it unbounded workers whose service time grows with
     * the calls in service beyond {@code loadKnee}; {@code spikeFactor > 1} multiplies the service
     * time of the calls submitted in the middle fifth of the run. The load is open-loop Poisson at
     * {@code arrivalsPerSecond}, or, if {@code callers > 0}, that many closed-loop callers (the next
     * call when the last one ends, {@link #RETRY_AFTER} after a rejection). Every limiter starts at
     * {@code initial}.
     */
    record Scenario(
            String name,
            long durationNanos,
            int[] workerSteps,
            double arrivalsPerSecond,
            int callers,
            Service service,
            int loadKnee,
            double spikeFactor,
            long initial,
            long stream) {

        /** The knee halves: 40 workers, then 20; 3,000 requests a second (75% of the first, 150% of the second). */
        static Scenario halves(long seconds) {
            return halves(seconds, 42);
        }

        static Scenario halves(long seconds, long stream) {
            return open("knee halves (40 -> 20 workers)", seconds, new int[] {40, 20}, 3_000, stream);
        }

        /** The knee doubles: 20 workers, then 40; the same load. */
        static Scenario doubles(long seconds) {
            return doubles(seconds, 43);
        }

        static Scenario doubles(long seconds, long stream) {
            return open("knee doubles (20 -> 40 workers)", seconds, new int[] {20, 40}, 3_000, stream);
        }

        /** Lognormal service times (median 10 ms), 20 workers, 3,000 requests a second (about 130% of the knee). */
        static Scenario lognormal(long seconds, long stream) {
            return new Scenario(
                    "lognormal service times (20 workers)",
                    seconds * 1_000 * MS,
                    new int[] {20},
                    3_000,
                    0,
                    Service.LOGNORMAL,
                    0,
                    1,
                    INITIAL,
                    stream);
        }

        /**
         * No queue: every call is served at once, but its service time grows with the calls in
         * service beyond 20 (x2 at 40 in service); 3,000 requests a second (150% of what 20 serve).
         */
        static Scenario loadDependent(long seconds, long stream) {
            return new Scenario(
                    "service time grows beyond 20 in service",
                    seconds * 1_000 * MS,
                    new int[] {100_000},
                    3_000,
                    0,
                    Service.UNIFORM,
                    20,
                    1,
                    INITIAL,
                    stream);
        }

        /** A x5 latency spike in the middle fifth of the run, 40 workers, 2,000 requests a second. */
        static Scenario spike(long seconds, long stream) {
            return new Scenario(
                    "x5 latency spike (40 workers)",
                    seconds * 1_000 * MS,
                    new int[] {40},
                    2_000,
                    0,
                    Service.UNIFORM,
                    0,
                    5,
                    INITIAL,
                    stream);
        }

        /** Built at 64 with 32 closed-loop callers in front of a downstream of 8 workers. */
        static Scenario coldStart(long seconds, long stream) {
            return new Scenario(
                    "cold start above the knee (64, 32 callers, 8 workers)",
                    seconds * 1_000 * MS,
                    new int[] {8},
                    0,
                    32,
                    Service.UNIFORM,
                    0,
                    1,
                    64,
                    stream);
        }

        /** The knee moves 8 -> 16 -> 8 workers in thirds; 1,200 requests a second (150%, then 75%, of the knee). */
        static Scenario movingKnee(long seconds, long stream) {
            return open("knee moves (8 -> 16 -> 8 workers)", seconds, new int[] {8, 16, 8}, 1_200, stream);
        }

        private static Scenario open(String name, long seconds, int[] steps, double rate, long stream) {
            return new Scenario(name, seconds * 1_000 * MS, steps, rate, 0, Service.UNIFORM, 0, 1, INITIAL, stream);
        }

        /** The same scenario with other random streams. */
        Scenario withStream(long newStream) {
            return new Scenario(
                    name,
                    durationNanos,
                    workerSteps,
                    arrivalsPerSecond,
                    callers,
                    service,
                    loadKnee,
                    spikeFactor,
                    initial,
                    newStream);
        }

        int workersBefore() {
            return workerSteps[0];
        }

        int workersAfter() {
            return workerSteps[workerSteps.length - 1];
        }

        /** The first change of the workers (half the run if they never change). */
        long changeAt() {
            return durationNanos / Math.max(2, workerSteps.length);
        }

        /** The workers at {@code t}. */
        int workersAt(long t) {
            return workerSteps[(int) Math.min(workerSteps.length - 1, t * workerSteps.length / durationNanos)];
        }

        /** The concurrency beyond which latency grows: the workers, or the load knee. */
        int kneeAt(long t) {
            return loadKnee > 0 ? loadKnee : workersAt(t);
        }

        boolean spikeAt(long t) {
            return spikeFactor > 1 && t >= durationNanos * 2 / 5 && t < durationNanos * 3 / 5;
        }

        /** The p99 of a call's own time with nothing queued (the latency target is twice this). */
        double unloadedP99Millis() {
            return service == Service.LOGNORMAL ? 10 * Math.exp(0.5 * 2.326) : AdaptiveSimulation.unloadedP99Millis();
        }

        /** What the downstream can answer per second, capped by the demand, after the change. */
        double goodputCeilingAfter() {
            return Math.min(arrivalsPerSecond, workersAfter() * 1e9 / ((SERVICE_MIN + SERVICE_MAX) / 2.0));
        }
    }

    /**
     * A call's own time: {@link #SERVICE_MIN} to {@link #SERVICE_MAX}, uniform (10 ms on average).
     *
     * @param random the stream to draw from
     * @return nanoseconds
     */
    static long uniformServiceNanos(SplittableRandom random) {
        return SERVICE_MIN + random.nextLong(SERVICE_MAX - SERVICE_MIN + 1);
    }

    /**
     * The load knee: a call's time grows with the calls in service beyond {@code knee}, itself
     * counted (twice its own time at twice the knee). Past the knee, the calls answered per second
     * stay at what the knee serves while each call takes longer.
     *
     * @param service the call's own time, nanoseconds
     * @param inServiceBefore the calls already in service as it starts
     * @param knee the concurrency beyond which the time grows
     * @return the call's time, nanoseconds
     */
    static long beyondKnee(long service, int inServiceBefore, int knee) {
        return Math.round(service * Math.max(1.0, (inServiceBefore + 1.0) / knee));
    }

    /** The wait of a closed-loop caller after a rejection before it tries again. */
    static final long RETRY_AFTER = 5 * MS;

    /**
     * What one contender did in one scenario: {@code successes} answered within the run,
     * {@code lateSuccesses} answered while it drained, {@code dropped} timed out (caller side).
     */
    record Result(
            String contender,
            long arrivals,
            long successes,
            long lateSuccesses,
            long rejected,
            long dropped,
            double goodputPerSecond,
            double p50Millis,
            double p99Millis,
            double p99WithWaitMillis,
            double convergeSeconds,
            double[] limitTimeline,
            double[] p99Timeline,
            double[] goodputTimeline,
            boolean allPermitsBack) {}

    // ---------------------------------------------------------------- the engine

    /** One simulation: clock, events, downstream, load, statistics. */
    static final class Run {
        final Scenario scenario;
        final SplittableRandom random;
        private final PriorityQueue<long[]> events =
                new PriorityQueue<>((a, b) -> a[0] != b[0] ? Long.compare(a[0], b[0]) : Long.compare(a[1], b[1]));
        private final List<Runnable> actions = new ArrayList<>();
        private final ArrayDeque<Integer> freeSlots = new ArrayDeque<>();
        long now;
        private long seq;
        // downstream
        int workers;
        int busy;
        private final ArrayDeque<Call> downstreamQueue = new ArrayDeque<>();
        // statistics
        long arrivals;
        long rejected;
        long dropped;
        final LongList successAt = new LongList();
        final LongList latency = new LongList();
        final LongList latencyWithWait = new LongList();

        Run(Scenario scenario) {
            this.scenario = scenario;
            this.random = new SplittableRandom(scenario.stream());
            this.workers = scenario.workersBefore();
        }

        /** A closed-loop caller's next call, {@code delay} from now (before the end); nothing for open-loop load. */
        Runnable nextCall;

        void ended(long delay) {
            if (nextCall != null && now + delay < scenario.durationNanos()) {
                at(now + delay, nextCall);
            }
        }

        void at(long time, Runnable action) {
            int slot;
            if (freeSlots.isEmpty()) {
                slot = actions.size();
                actions.add(action);
            } else {
                slot = freeSlots.pop();
                actions.set(slot, action);
            }
            events.add(new long[] {time, seq++, slot});
        }

        void runUntil(long end) {
            long[] e;
            while ((e = events.peek()) != null && e[0] <= end) {
                events.poll();
                now = e[0];
                Runnable action = actions.get((int) e[2]);
                actions.set((int) e[2], null);
                freeSlots.push((int) e[2]);
                action.run();
            }
            now = end;
        }

        /** The downstream takes a call: a free worker, or its queue. */
        void submit(Call call) {
            long service = scenario.service() == Service.LOGNORMAL
                    ? Math.max(1, Math.round(10 * MS * Math.exp(0.5 * random.nextGaussian())))
                    : uniformServiceNanos(random);
            if (scenario.loadKnee() > 0) {
                service = beyondKnee(service, busy, scenario.loadKnee());
            }
            if (scenario.spikeAt(now)) {
                service = Math.round(service * scenario.spikeFactor());
            }
            call.service = service;
            if (busy < workers && downstreamQueue.isEmpty()) {
                serve(call);
            } else {
                downstreamQueue.add(call);
            }
        }

        private void serve(Call call) {
            busy++;
            at(now + call.service, () -> {
                busy--;
                fill(); // the downstream's queue first: FIFO
                call.answered();
            });
        }

        void fill() {
            while (busy < workers && !downstreamQueue.isEmpty()) {
                serve(downstreamQueue.poll());
            }
        }
    }

    /** One request. */
    static final class Call {
        final Run run;
        final Gate gate;
        final long arrived;
        long admitted;
        long service;
        boolean done;
        Object token; // the gate's: its handle, listener or acquisition

        Call(Run run, Gate gate) {
            this.run = run;
            this.gate = gate;
            this.arrived = run.now;
        }

        /** The gate admitted it: off to the downstream, with a deadline. */
        void start() {
            admitted = run.now;
            run.submit(this);
            run.at(admitted + CALL_TIMEOUT, () -> {
                if (!done) {
                    done = true;
                    run.dropped++;
                    gate.finished(this, false);
                    run.ended(0);
                }
            });
        }

        void answered() {
            if (done) {
                return; // the caller gave up: wasted work
            }
            done = true;
            run.successAt.add(run.now);
            run.latency.add(run.now - admitted);
            run.latencyWithWait.add(run.now - arrived);
            gate.finished(this, true);
            run.ended(0);
        }

        void reject() {
            run.rejected++;
            run.ended(RETRY_AFTER);
        }
    }

    /** A contender: how requests are admitted. */
    interface Gate {
        void arrive(Call call);

        /** The call ended: answered ({@code true}) or timed out. */
        void finished(Call call, boolean success);

        /** The limit in force, for the timeline. */
        double limit();

        /** Whether every permit came back at the end (after the run drained). */
        boolean allBack();
    }

    /** handoff's Semaphore, static or driven by an AdaptiveCapacity. */
    static final class SemaphoreGate implements Gate {
        final Semaphore semaphore;
        final AdaptiveCapacity adaptive; // null: static

        /** Static if {@code adaptive} is false; else the built-in algorithm, or {@code limit} through the bridge. */
        SemaphoreGate(Run run, long capacity, boolean adaptive, Limit limit) {
            this.semaphore =
                    Semaphore.builder(capacity).maxQueueLength(MAX_QUEUE).build();
            if (!adaptive) {
                this.adaptive = null;
            } else {
                AdaptiveCapacity.Builder b = AdaptiveCapacity.builder(semaphore)
                        .minCapacity(1)
                        .maxCapacity(MAX)
                        .nanoClock(() -> run.now);
                this.adaptive = (limit == null ? b : b.limit(limit)).build();
            }
        }

        @Override
        public void arrive(Call call) {
            Acquisition[] holder = new Acquisition[1];
            Acquisition a;
            try {
                a = semaphore.acquireThen(1, () -> {
                    if (adaptive != null) {
                        call.token = adaptive.startSample(1);
                    }
                    call.start();
                });
            } catch (SemaphoreRejectedException full) {
                rejected(call);
                return;
            }
            holder[0] = a;
            if (!a.isGranted()) {
                call.run.at(call.run.now + QUEUE_TIMEOUT, () -> {
                    if (holder[0].cancel()) {
                        rejected(call);
                    }
                });
            }
        }

        private void rejected(Call call) {
            call.reject();
            if (adaptive != null) {
                adaptive.recordRejection(1);
            }
        }

        @Override
        public void finished(Call call, boolean success) {
            if (adaptive == null) {
                semaphore.release(1);
                return;
            }
            SampledPermits p = (SampledPermits) call.token;
            if (!success) {
                p.markDropped();
            }
            p.close();
        }

        @Override
        public double limit() {
            return adaptive == null ? semaphore.capacity() : adaptive.capacity();
        }

        @Override
        public boolean allBack() {
            return semaphore.queueLength() == 0
                    && semaphore.availablePermits() == semaphore.capacity()
                    && (adaptive == null || adaptive.inFlight() == 0);
        }
    }

    /** Netflix's SimpleLimiter: admits up to its limit, rejects the rest at once. */
    static class SimpleGate implements Gate {
        final SimpleLimiter<Void> limiter;

        SimpleGate(Run run, Limit limit) {
            this.limiter = SimpleLimiter.newBuilder()
                    .limit(limit)
                    .nanoClock(() -> run.now)
                    .build();
        }

        @Override
        public void arrive(Call call) {
            Optional<Limiter.Listener> listener = limiter.acquire(null);
            if (listener.isEmpty()) {
                call.reject();
                return;
            }
            call.token = listener.get();
            call.start();
        }

        @Override
        public void finished(Call call, boolean success) {
            Limiter.Listener listener = (Limiter.Listener) call.token;
            if (success) {
                listener.onSuccess();
            } else {
                listener.onDropped();
            }
        }

        @Override
        public double limit() {
            return limiter.getLimit();
        }

        @Override
        public boolean allBack() {
            return limiter.getInflight() == 0;
        }
    }

    /**
     * Netflix's BlockingLimiter around a SimpleLimiter, its wait loop modelled: a request that the
     * delegate refuses waits (at most QUEUE_TIMEOUT); every release wakes all waiters
     * ({@code notifyAll}), and they retry in an arbitrary order (random here); arrivals try first.
     */
    static final class BlockingGate extends SimpleGate {
        private final List<Call> waiting = new ArrayList<>();
        private final Run run;

        BlockingGate(Run run, Limit limit) {
            super(run, limit);
            this.run = run;
        }

        @Override
        public void arrive(Call call) {
            Optional<Limiter.Listener> listener = limiter.acquire(null);
            if (listener.isPresent()) {
                call.token = listener.get();
                call.start();
                return;
            }
            waiting.add(call);
            run.at(run.now + QUEUE_TIMEOUT, () -> {
                if (waiting.remove(call)) {
                    call.reject();
                }
            });
        }

        @Override
        public void finished(Call call, boolean success) {
            super.finished(call, success);
            // notifyAll: every waiter retries, in an order the monitor does not promise.
            int n = waiting.size();
            if (n == 0) {
                return;
            }
            int from = run.random.nextInt(n);
            List<Call> admitted = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                Call w = waiting.get((from + i) % n);
                Optional<Limiter.Listener> listener = limiter.acquire(null);
                if (listener.isEmpty()) {
                    break; // the delegate is full: the rest find it full too
                }
                w.token = listener.get();
                admitted.add(w);
            }
            waiting.removeAll(admitted);
            for (Call w : admitted) {
                w.start();
            }
        }

        @Override
        public boolean allBack() {
            return super.allBack() && waiting.isEmpty();
        }
    }

    /** A contender: a name and how to make its gate for a run. */
    record Contender(String name, java.util.function.Function<Run, Gate> gate) {}

    static final long INITIAL = 20;
    static final long MAX = 1_000;

    /** Ours, each Netflix Limit through the bridge, SimpleLimiter, BlockingLimiter (each Netflix algorithm with its defaults). */
    static List<Contender> contenders() {
        List<Contender> list = new ArrayList<>();
        list.add(new Contender(OURS, run -> new SemaphoreGate(run, run.scenario.initial(), true, null)));
        list.add(new Contender(GRADIENT2, run -> new SemaphoreGate(run, run.scenario.initial(), true, gradient2(run))));
        list.add(new Contender("handoff + GradientLimit", run -> {
            long i = run.scenario.initial();
            return new SemaphoreGate(
                    run,
                    i,
                    true,
                    i == INITIAL
                            ? GradientLimit.newDefault()
                            : GradientLimit.newBuilder().initialLimit((int) i).build());
        }));
        list.add(new Contender(VEGAS, run -> new SemaphoreGate(run, run.scenario.initial(), true, vegas(run))));
        list.add(new Contender(
                "handoff + AIMDLimit",
                run -> new SemaphoreGate(
                        run,
                        run.scenario.initial(),
                        true,
                        AIMDLimit.newBuilder()
                                .initialLimit((int) run.scenario.initial())
                                .build())));
        list.add(new Contender(SIMPLE, run -> new SimpleGate(run, gradient2(run))));
        list.add(new Contender(BLOCKING, run -> new BlockingGate(run, gradient2(run))));
        return list;
    }

    static final String GRADIENT2 = "handoff + Gradient2Limit";
    static final String VEGAS = "handoff + VegasLimit";
    static final String SIMPLE = "Netflix SimpleLimiter (Gradient2)";
    static final String BLOCKING = "Netflix BlockingLimiter (Gradient2)";

    /** The contenders of the runs repeated: ours and Netflix's Gradient2 and Vegas, bridged and in Netflix's limiters. */
    static List<Contender> repeatedContenders() {
        List<Contender> list = new ArrayList<>();
        for (Contender c : contenders()) {
            if (List.of(OURS, GRADIENT2, VEGAS, SIMPLE, BLOCKING).contains(c.name())) {
                list.add(c);
            }
        }
        return list;
    }

    private static Limit gradient2(Run run) {
        long i = run.scenario.initial();
        return i == INITIAL
                ? Gradient2Limit.newDefault()
                : Gradient2Limit.newBuilder().initialLimit((int) i).build();
    }

    private static Limit vegas(Run run) {
        long i = run.scenario.initial();
        return i == INITIAL
                ? VegasLimit.newDefault()
                : VegasLimit.newBuilder().initialLimit((int) i).build();
    }

    static final String OURS = "handoff AdaptiveCapacity (built-in)";
    static final String STATIC = "static ";

    /** The static capacities of the sweep. */
    static List<Contender> sweep() {
        List<Contender> list = new ArrayList<>();
        for (long c = 5; c <= 80; c += 5) {
            long capacity = c;
            list.add(new Contender(STATIC + capacity, run -> new SemaphoreGate(run, capacity, false, null)));
        }
        return list;
    }

    // ---------------------------------------------------------------- one run

    /** Runs one contender through one scenario, then lets every call end. */
    static Result run(Scenario scenario, Contender contender) {
        Run run = new Run(scenario);
        Gate gate = contender.gate().apply(run);
        long end = scenario.durationNanos();
        // Poisson arrivals: exponential gaps, drawn as the run goes.
        double meanGap = 1e9 / scenario.arrivalsPerSecond();
        if (scenario.callers() > 0) {
            run.nextCall = () -> {
                run.arrivals++;
                gate.arrive(new Call(run, gate));
            };
            for (int i = 0; i < scenario.callers(); i++) {
                run.at(0, run.nextCall);
            }
        } else {
            Runnable[] arrive = new Runnable[1];
            arrive[0] = () -> {
                run.arrivals++;
                gate.arrive(new Call(run, gate));
                long gap = Math.max(1, Math.round(-meanGap * Math.log(1 - run.random.nextDouble())));
                if (run.now + gap < end) {
                    run.at(run.now + gap, arrive[0]);
                }
            };
            run.at(0, arrive[0]);
        }
        int[] steps = scenario.workerSteps();
        for (int k = 1; k < steps.length; k++) {
            int workers = steps[k];
            run.at(end * k / steps.length, () -> {
                run.workers = workers;
                run.fill();
            });
        }
        int points = (int) (end / TIMELINE_STEP);
        double[] limits = new double[points];
        for (int i = 0; i < points; i++) {
            run.runUntil(i * TIMELINE_STEP);
            limits[i] = gate.limit();
        }
        run.runUntil(end);
        long successes = run.successAt.size();
        run.runUntil(end + 10 * CALL_TIMEOUT + 10 * QUEUE_TIMEOUT); // drain: every call ends
        return summarize(scenario, contender.name(), run, successes, limits, gate.allBack());
    }

    private static Result summarize(
            Scenario scenario, String name, Run run, long successes, double[] limits, boolean allBack) {
        long end = scenario.durationNanos();
        int buckets = (int) (end / BUCKET);
        double[] p99s = new double[buckets];
        double[] goodputs = new double[buckets];
        long[] at = run.successAt.toArray();
        long[] lat = run.latency.toArray();
        LongList[] inBucket = new LongList[buckets];
        for (int b = 0; b < buckets; b++) {
            inBucket[b] = new LongList();
        }
        for (int i = 0; i < at.length; i++) {
            int b = (int) (at[i] / BUCKET);
            if (b < buckets) {
                inBucket[b].add(lat[i]);
            }
        }
        for (int b = 0; b < buckets; b++) {
            goodputs[b] = inBucket[b].size() * 1e9 / BUCKET;
            p99s[b] = inBucket[b].size() == 0 ? Double.NaN : percentile(inBucket[b].toArray(), 0.99) / 1e6;
        }
        long[] inRun = Arrays.copyOf(lat, (int) successes);
        long[] withWait = Arrays.copyOf(run.latencyWithWait.toArray(), (int) successes);
        double converge = convergeSeconds(scenario, p99s, goodputs);
        return new Result(
                name,
                run.arrivals,
                successes,
                run.successAt.size() - successes,
                run.rejected,
                run.dropped,
                successes * 1e9 / end,
                percentile(inRun, 0.50) / 1e6,
                percentile(inRun, 0.99) / 1e6,
                percentile(withWait, 0.99) / 1e6,
                converge,
                limits,
                p99s,
                goodputs,
                allBack);
    }

    /** The unloaded p99 latency: the p99 of a call's own time, with nothing queued (the target is twice this). */
    static double unloadedP99Millis() {
        return (SERVICE_MIN + 0.99 * (SERVICE_MAX - SERVICE_MIN)) / 1e6;
    }

    /**
     * Seconds from the change until the first one-second bucket from which every later bucket is
     * healthy: p99 within twice the unloaded p99, and goodput at least 90% of what the downstream
     * can answer (capped by the demand). {@code +Infinity} if that never happens.
     */
    static double convergeSeconds(Scenario scenario, double[] p99s, double[] goodputs) {
        int first = (int) (scenario.changeAt() / BUCKET);
        double ceiling = scenario.goodputCeilingAfter();
        int healthyFrom = -1;
        for (int b = p99s.length - 1; b >= first; b--) {
            boolean healthy = !Double.isNaN(p99s[b])
                    && p99s[b] <= 2 * scenario.unloadedP99Millis()
                    && goodputs[b] >= 0.9 * ceiling;
            if (!healthy) {
                break;
            }
            healthyFrom = b;
        }
        return healthyFrom < 0 ? Double.POSITIVE_INFINITY : (healthyFrom - first) * BUCKET / 1e9;
    }

    static double percentile(long[] values, double q) {
        if (values.length == 0) {
            return Double.NaN;
        }
        long[] sorted = values.clone();
        Arrays.sort(sorted);
        return sorted[(int) Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
    }

    /** A growable array of longs. */
    static final class LongList {
        private long[] values = new long[1024];
        private int size;

        void add(long v) {
            if (size == values.length) {
                values = Arrays.copyOf(values, size * 2);
            }
            values[size++] = v;
        }

        int size() {
            return size;
        }

        long[] toArray() {
            return Arrays.copyOf(values, size);
        }
    }

    // ---------------------------------------------------------------- the report

    /** One scenario, every contender and the sweep: the results, the best static one named (null without a sweep). */
    record Comparison(Scenario scenario, List<Result> contenders, List<Result> sweep, Result bestStatic) {}

    static Comparison compare(Scenario scenario) {
        List<Result> results = new ArrayList<>();
        for (Contender c : contenders()) {
            results.add(run(scenario, c));
        }
        List<Result> statics = new ArrayList<>();
        for (Contender c : sweep()) {
            statics.add(run(scenario, c));
        }
        Result best = statics.get(0);
        for (Result r : statics) {
            // The most goodput; among those within 1% of it, the lowest p99.
            if (r.goodputPerSecond() > best.goodputPerSecond() * 1.01
                    || (r.goodputPerSecond() >= best.goodputPerSecond() * 0.99 && r.p99Millis() < best.p99Millis())) {
                best = r;
            }
        }
        return new Comparison(scenario, results, statics, best);
    }

    static String table(Comparison c) {
        StringBuilder sb = new StringBuilder();
        Scenario s = c.scenario();
        sb.append("### ").append(s.name()).append("\n\n");
        sb.append(
                s.workersAfter() < s.workersBefore()
                        ? "The downstream loses half its workers halfway through: a limit must come down at once, or calls queue\n"
                                + "in the downstream and time out.\n\n"
                        : "The downstream gets twice the workers halfway through: a limit must grow to use them, or it rejects\n"
                                + "requests the downstream could have answered.\n\n");
        sb.append(String.format(
                Locale.ROOT,
                "%s: %d s, %.0f requests/s, change at %d s; unloaded p99 %.1f ms%n%n",
                s.name(),
                s.durationNanos() / 1_000_000_000L,
                s.arrivalsPerSecond(),
                s.changeAt() / 1_000_000_000L,
                unloadedP99Millis()));
        sb.append(
                "| contender | goodput/s | vs best static | p50 ms | p99 ms | p99 with wait ms | rejected | timed out | converged after change |\n");
        sb.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        List<Result> rows = new ArrayList<>(c.contenders());
        rows.add(c.bestStatic());
        for (Result r : rows) {
            String name = r == c.bestStatic()
                    ? "best static (" + r.contender().substring(STATIC.length()) + ", from the sweep)"
                    : r.contender();
            sb.append(String.format(
                    Locale.ROOT,
                    "| %s | %.0f | %.0f%% | %.1f | %.1f | %.1f | %d | %d | %s |%n",
                    name,
                    r.goodputPerSecond(),
                    100 * r.goodputPerSecond() / c.bestStatic().goodputPerSecond(),
                    r.p50Millis(),
                    r.p99Millis(),
                    r.p99WithWaitMillis(),
                    r.rejected(),
                    r.dropped(),
                    Double.isInfinite(r.convergeSeconds())
                            ? "never"
                            : String.format(Locale.ROOT, "%.0f s", r.convergeSeconds())));
        }
        return sb.toString();
    }

    // ---------------------------------------------------------------- many runs

    /** Every scenario of the runs over many random streams (the stream given here is replaced). */
    static List<Scenario> repeatedScenarios(long seconds) {
        return List.of(
                Scenario.halves(seconds, 0),
                Scenario.doubles(seconds, 0),
                Scenario.lognormal(seconds, 0),
                Scenario.loadDependent(seconds, 0),
                Scenario.spike(seconds, 0),
                Scenario.coldStart(seconds, 0),
                Scenario.movingKnee(seconds, 0));
    }

    /** One scenario run n times (random streams 1 to n): each contender's results, in order. */
    record Repeated(Scenario scenario, java.util.Map<String, List<Result>> results) {}

    static Repeated repeated(Scenario scenario, int repeats, List<Contender> contenders) {
        java.util.Map<String, List<Result>> results = new java.util.LinkedHashMap<>();
        for (Contender c : contenders) {
            List<Result> runs = new ArrayList<>();
            for (long stream = 1; stream <= repeats; stream++) {
                runs.add(run(scenario.withStream(stream), c));
            }
            results.put(c.name(), runs);
        }
        return new Repeated(scenario, results);
    }

    /**
     * Where the limit settled, as a multiple of the knee: its mean over the last fifth of the run
     * divided by the knee in force at the end.
     */
    static double settledOverKnee(Scenario scenario, Result r) {
        double[] limits = r.limitTimeline();
        int from = limits.length - Math.max(1, limits.length / 5);
        double sum = 0;
        for (int i = from; i < limits.length; i++) {
            sum += limits[i];
        }
        return sum / (limits.length - from) / scenario.kneeAt(scenario.durationNanos() - 1);
    }

    static double median(double[] values) {
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        int n = sorted.length;
        return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    }

    private static double[] each(List<Result> runs, java.util.function.ToDoubleFunction<Result> f) {
        return runs.stream().mapToDouble(f).toArray();
    }

    static String repeatedTable(Repeated repeated, int repeats) {
        Scenario s = repeated.scenario();
        StringBuilder sb = new StringBuilder();
        sb.append("### ").append(s.name()).append("\n\n");
        sb.append(String.format(
                Locale.ROOT,
                "Median and worst of %d runs, %d s each; %s; unloaded p99 %.1f ms.%n%n",
                repeats,
                s.durationNanos() / 1_000_000_000L,
                s.callers() > 0
                        ? s.callers() + " closed-loop callers, every limit starting at " + s.initial()
                        : String.format(Locale.ROOT, "%.0f requests/s", s.arrivalsPerSecond()),
                s.unloadedP99Millis()));
        sb.append("| contender | goodput/s median | worst | p99 ms median | worst | timed out median | worst"
                + " | settled limit / knee median | max |\n");
        sb.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for (java.util.Map.Entry<String, List<Result>> e : repeated.results().entrySet()) {
            List<Result> runs = e.getValue();
            double[] goodput = each(runs, Result::goodputPerSecond);
            double[] p99 = each(runs, Result::p99Millis);
            double[] dropped = each(runs, r -> r.dropped());
            double[] settled = each(runs, r -> settledOverKnee(s, r));
            sb.append(String.format(
                    Locale.ROOT,
                    "| %s | %.0f | %.0f | %.1f | %.1f | %.0f | %.0f | %.2f | %.2f |%n",
                    e.getKey(),
                    median(goodput),
                    Arrays.stream(goodput).min().orElse(Double.NaN),
                    median(p99),
                    Arrays.stream(p99).max().orElse(Double.NaN),
                    median(dropped),
                    Arrays.stream(dropped).max().orElse(Double.NaN),
                    median(settled),
                    Arrays.stream(settled).max().orElse(Double.NaN)));
        }
        return sb.toString();
    }

    /** The text before the tables over many runs. */
    static final String REPEATED_HEADER = """
            ## Over many runs

            Each scenario below ran %d times, each run with random streams of its own (arrivals, service
            times and, for Netflix's algorithms, their own random draws differ); each table gives the median and the
            worst run of each contender: the least goodput, the highest p99 latency of an answered call, the most calls timed out,
            and the highest "settled limit / knee", the mean limit over the last fifth of the run divided by the
            downstream's knee at the end (its workers, or the concurrency beyond which its service time grows;
            1 is the knee, 2 twice the knee).

            """;

    /**
     * Runs the scenarios and prints the tables; with {@code --out DIR}, writes
     * {@code adaptive-results.md} (the tables) and {@code adaptive.png} (the chart) there.
     * {@code --seconds N} sets the length of each run (default 60), {@code --runs N} the number of
     * runs of each scenario with random streams of their own (default 10; 0 leaves them out).
     *
     * @param args {@code [--seconds N] [--runs N] [--out DIR]}
     * @throws IOException if the files cannot be written
     */
    public static void main(String[] args) throws IOException {
        long seconds = 60;
        int repeats = 10;
        Path out = null;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--seconds" -> seconds = Long.parseLong(args[++i]);
                case "--runs" -> repeats = Integer.parseInt(args[++i]);
                case "--out" -> out = Path.of(args[++i]);
                default ->
                    throw new IllegalArgumentException(
                            "unknown argument " + args[i] + "; usage: [--seconds N] [--runs N] [--out DIR]");
            }
        }
        List<Comparison> comparisons =
                new ArrayList<>(List.of(compare(Scenario.halves(seconds)), compare(Scenario.doubles(seconds))));
        StringBuilder md = new StringBuilder(HEADER);
        if (repeats > 0) {
            md.append(String.format(Locale.ROOT, REPEATED_HEADER, repeats));
            List<Contender> contenders = repeatedContenders();
            for (Scenario scenario : repeatedScenarios(seconds)) {
                Repeated repeated = repeated(scenario, repeats, contenders);
                md.append(repeatedTable(repeated, repeats)).append('\n');
                if (scenario.workerSteps().length == 2) {
                    continue; // charted from the single runs with the sweep
                }
                List<Result> first = new ArrayList<>();
                for (List<Result> runs : repeated.results().values()) {
                    first.add(runs.get(0));
                }
                comparisons.add(new Comparison(scenario.withStream(1), first, List.of(), null));
            }
            md.append("## One run each, with the sweep of static limits\n\n");
        }
        for (Comparison c : comparisons) {
            if (c.bestStatic() != null) {
                md.append(table(c)).append('\n');
            }
        }
        System.out.print(md);
        if (out != null) {
            Files.createDirectories(out);
            Files.writeString(out.resolve("adaptive-results.md"), md.toString());
            AdaptiveChart.write(out.resolve("adaptive.png"), comparisons);
            System.out.println("wrote " + out.resolve("adaptive-results.md") + " and " + out.resolve("adaptive.png"));
        }
    }
}
