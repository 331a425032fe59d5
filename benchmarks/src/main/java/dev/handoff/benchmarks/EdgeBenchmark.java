// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientInterceptors;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.MetadataUtils;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * The edge benchmark: admission control in front of a real gRPC server (in-process transport)
 * whose handler has a knee ({@link EdgeServer}), under an open-loop load from two tenants: a
 * polite one at {@code r} calls a second and a noisy one that floods at {@code 10 r}. Together
 * they ask for more than the server can answer, so something must be turned away; the question
 * is what, and at what cost to the polite tenant.
 *
 * <p><b>The load.</b> Calls arrive as a Poisson process at the total rate, each one the polite
 * tenant's with probability 1/11 (so each tenant's arrivals are Poisson too), sent on schedule
 * whether or not the earlier ones were answered (open loop: one thread parks until each call's
 * time, and sends late ones at once). Every call has a deadline ({@link Settings#deadline()},
 * 1 s): the client gives up then and the server sees the call cancelled.
 *
 * <p><b>What is measured</b>, per contender ({@link EdgeContenders}), in a run of its own on a
 * fresh server after a warm-up of every contender: per tenant, the calls sent, answered (OK),
 * shed (closed by the limit: {@code UNAVAILABLE} or {@code RESOURCE_EXHAUSTED}), timed out
 * ({@code DEADLINE_EXCEEDED}) and failed otherwise; the p50 and p99 latency of the answered
 * calls, as the client sees it (from sending to the answer, so a wait in a queue counts);
 * goodput, the calls answered within the deadline per second of the run; and the server's
 * in-flight count ({@link EdgeServer#inService()}), sampled every {@link #SAMPLE_MILLIS} ms, with
 * the limiter's limit. After the run the benchmark waits for every call to end and the server to
 * finish its work, then asks the contender whether every permit is back.
 *
 * <p>The figures depend on the machine, its load and the JIT: they compare the contenders within
 * one run. {@link LoadGuard} measures the CPU other processes used during each contender's run;
 * the report states it.
 */
final class EdgeBenchmark {

    static final String POLITE = "polite";
    static final String NOISY = "noisy";
    static final long SAMPLE_MILLIS = 50;

    /**
     * One run's settings.
     *
     * @param seconds how long each contender is measured
     * @param warmupSeconds how long each contender runs, before any is measured, at half the
     *     server's capacity (to compile the code paths; not measured)
     * @param politeRate the polite tenant's calls per second; the noisy tenant sends ten times as many
     * @param knee the calls in service beyond which the server slows down; also every fixed limit
     * @param deadline the deadline of every call
     * @param maxWait the longest a call waits in handoff's queue
     * @param executors the server executor's threads
     * @param seed the random streams (arrivals, service times)
     */
    record Settings(
            double seconds,
            double warmupSeconds,
            double politeRate,
            int knee,
            Duration deadline,
            Duration maxWait,
            int executors,
            long seed) {

        /** The documented run: 15 s per contender, 250 polite calls/s, a knee of 20. */
        static Settings full() {
            return new Settings(15, 2, 250, 20, Duration.ofSeconds(1), Duration.ofMillis(200), 2, 42);
        }

        /** Every contender briefly, for the smoke test: 1 s each, no warm-up. */
        static Settings smoke() {
            return new Settings(1, 0, 250, 20, Duration.ofSeconds(1), Duration.ofMillis(200), 2, 42);
        }

        /** @return both tenants' calls per second together */
        double totalRate() {
            return politeRate * 11;
        }

        /** @return about what the server answers per second at the knee: knee / 10 ms */
        double capacityPerSecond() {
            return knee * 1e9 / ((AdaptiveSimulation.SERVICE_MIN + AdaptiveSimulation.SERVICE_MAX) / 2.0);
        }
    }

    /**
     * What one tenant got.
     *
     * @param sent calls sent during the run
     * @param ok answered
     * @param shed closed by the limit
     * @param timedOut past their deadline
     * @param failed any other status (none expected)
     * @param p50Millis p50 latency of the answered calls
     * @param p99Millis p99 latency of the answered calls
     * @param goodputPerSecond calls answered within the deadline per second of the run (the time
     *     the calls were sent in: the run's length, longer if the load generator fell behind)
     */
    record Tenant(
            long sent,
            long ok,
            long shed,
            long timedOut,
            long failed,
            double p50Millis,
            double p99Millis,
            double goodputPerSecond) {

        /** @return whether every call sent ended exactly one way */
        boolean everyCallEnded() {
            return sent == ok + shed + timedOut + failed;
        }
    }

    /**
     * What one contender did.
     *
     * @param contender its name
     * @param polite the polite tenant's figures
     * @param noisy the noisy tenant's figures
     * @param inFlight the server's in-flight count every {@link #SAMPLE_MILLIS} ms of the run
     * @param limit the contender's limit at the same instants (NaN if it has none)
     * @param permitsBack whether every permit was back once the run had drained
     * @param leftInService calls still in service after the drain (0 expected)
     * @param maxSendLagMillis how late the load generator sent its latest call (the open loop held if small)
     */
    record Result(
            String contender,
            Tenant polite,
            Tenant noisy,
            double[] inFlight,
            double[] limit,
            boolean permitsBack,
            int leftInService,
            double maxSendLagMillis) {

        double meanInFlight() {
            return Arrays.stream(inFlight).average().orElse(Double.NaN);
        }

        double maxInFlight() {
            return Arrays.stream(inFlight).max().orElse(Double.NaN);
        }

        /** @return the limit at the end of the run, NaN if none */
        double finalLimit() {
            return limit.length == 0 ? Double.NaN : limit[limit.length - 1];
        }
    }

    /**
     * A whole run.
     *
     * @param settings its settings
     * @param machine where and when
     * @param results one per contender
     * @param load the CPU other processes used during the measured runs
     * @param seconds how long the whole run took, warm-up included
     */
    record Report(Settings settings, Machine machine, List<Result> results, OtherLoad.Summary load, double seconds) {}

    private EdgeBenchmark() {}

    /** One tenant's client side: its channel and its counts. */
    private static final class Client {
        final Channel channel;
        final AtomicLong sent = new AtomicLong();
        final AtomicLong ok = new AtomicLong();
        final AtomicLong shed = new AtomicLong();
        final AtomicLong timedOut = new AtomicLong();
        final AtomicLong failed = new AtomicLong();
        final AdaptiveSimulation.LongList latencies = new AdaptiveSimulation.LongList();

        Client(Channel base, String tenant) {
            Metadata headers = new Metadata();
            headers.put(EdgeServer.TENANT, tenant);
            this.channel = ClientInterceptors.intercept(base, MetadataUtils.newAttachHeadersInterceptor(headers));
        }

        Tenant figures(double seconds, long deadlineNanos) {
            long[] lat;
            synchronized (latencies) {
                lat = latencies.toArray();
            }
            long inTime = Arrays.stream(lat).filter(l -> l <= deadlineNanos).count();
            return new Tenant(
                    sent.get(),
                    ok.get(),
                    shed.get(),
                    timedOut.get(),
                    failed.get(),
                    AdaptiveSimulation.percentile(lat, 0.50) / 1e6,
                    AdaptiveSimulation.percentile(lat, 0.99) / 1e6,
                    inTime / seconds);
        }
    }

    /**
     * Runs every contender: the warm-up of each, then each one measured.
     *
     * @param settings the settings
     * @param contenders the contenders
     * @return the report
     * @throws Exception if a server cannot start or the run is interrupted
     */
    static Report run(Settings settings, List<EdgeContenders.Contender> contenders) throws Exception {
        Machine machine = Machine.current();
        long start = System.nanoTime();
        if (settings.warmupSeconds() > 0) {
            for (EdgeContenders.Contender c : contenders) {
                System.out.printf(Locale.ROOT, "# warm-up: %s%n", c.name());
                runOne(settings, c, settings.warmupSeconds(), settings.capacityPerSecond() / 2 / 11, null);
            }
        }
        LoadGuard guard = LoadGuard.start();
        List<Result> results = new ArrayList<>();
        for (EdgeContenders.Contender c : contenders) {
            System.out.printf(Locale.ROOT, "# measuring: %s%n", c.name());
            Result r = runOne(settings, c, settings.seconds(), settings.politeRate(), guard);
            results.add(r);
            System.out.print(row(r));
        }
        return new Report(settings, machine, results, guard.finish(), (System.nanoTime() - start) / 1e9);
    }

    /**
     * One contender on a fresh server for {@code seconds} at {@code politeRate} (the noisy tenant
     * at ten times that), then the drain.
     */
    static Result runOne(
            Settings settings, EdgeContenders.Contender contender, double seconds, double politeRate, LoadGuard guard)
            throws Exception {
        EdgeContenders.Built[] built = new EdgeContenders.Built[1];
        long deadlineNanos = settings.deadline().toNanos();
        try (EdgeServer server = new EdgeServer(
                settings.knee(),
                executor -> {
                    built[0] = contender.build().apply(settings, executor);
                    return built[0].interceptor();
                },
                settings.seed(),
                settings.executors())) {
            Client polite = new Client(server.channel(), POLITE);
            Client noisy = new Client(server.channel(), NOISY);
            AtomicLong outstanding = new AtomicLong();
            List<double[]> samples = new ArrayList<>();
            ScheduledExecutorService sampler = Executors.newSingleThreadScheduledExecutor(r -> {
                Thread t = new Thread(r, "edge-benchmark-sampler");
                t.setDaemon(true);
                return t;
            });
            long durationNanos = (long) (seconds * 1e9);
            if (guard != null) {
                guard.begin(contender.name());
            }
            long begin = System.nanoTime();
            sampler.scheduleAtFixedRate(
                    () -> {
                        synchronized (samples) {
                            samples.add(new double[] {
                                server.inService(), built[0].limit().getAsDouble()
                            });
                        }
                    },
                    SAMPLE_MILLIS,
                    SAMPLE_MILLIS,
                    TimeUnit.MILLISECONDS);
            SplittableRandom arrivals = new SplittableRandom(settings.seed() + 1);
            double rate = politeRate * 11;
            double at = 0;
            long maxLag = 0;
            while (true) {
                at += -Math.log(1 - arrivals.nextDouble()) / rate;
                long due = begin + (long) (at * 1e9);
                if (due - begin >= durationNanos) {
                    break;
                }
                Client tenant = arrivals.nextInt(11) == 0 ? polite : noisy;
                long wait;
                while ((wait = due - System.nanoTime()) > 0) {
                    LockSupport.parkNanos(wait);
                }
                maxLag = Math.max(maxLag, -wait);
                send(tenant, outstanding, deadlineNanos);
            }
            long sleep = begin + durationNanos - System.nanoTime();
            if (sleep > 0) {
                LockSupport.parkNanos(sleep);
            }
            // Late sends stretch the run: goodput is per second of the time the calls were sent in.
            double sendingSeconds = Math.max(seconds, (System.nanoTime() - begin) / 1e9);
            sampler.shutdown();
            sampler.awaitTermination(5, TimeUnit.SECONDS);
            if (guard != null) {
                guard.end();
            }
            // The drain: every call ends by its deadline; then the server finishes its work.
            long drainEnd = System.nanoTime() + deadlineNanos + TimeUnit.SECONDS.toNanos(30);
            while (outstanding.get() > 0 && System.nanoTime() < drainEnd) {
                Thread.sleep(5);
            }
            long serverEnd = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (server.inService() > 0 && System.nanoTime() < serverEnd) {
                Thread.sleep(5);
            }
            long permitsEnd = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (!built[0].permitsBack().getAsBoolean() && System.nanoTime() < permitsEnd) {
                Thread.sleep(5);
            }
            double[] inFlight;
            double[] limit;
            synchronized (samples) {
                inFlight = samples.stream().mapToDouble(s -> s[0]).toArray();
                limit = samples.stream().mapToDouble(s -> s[1]).toArray();
            }
            if (limit.length > 0 && Double.isNaN(limit[0])) {
                limit = new double[0];
            }
            return new Result(
                    contender.name(),
                    polite.figures(sendingSeconds, deadlineNanos),
                    noisy.figures(sendingSeconds, deadlineNanos),
                    inFlight,
                    limit,
                    built[0].permitsBack().getAsBoolean(),
                    server.inService(),
                    maxLag / 1e6);
        }
    }

    private static void send(Client tenant, AtomicLong outstanding, long deadlineNanos) {
        tenant.sent.incrementAndGet();
        outstanding.incrementAndGet();
        long sent = System.nanoTime();
        ClientCalls.asyncUnaryCall(
                tenant.channel.newCall(
                        EdgeServer.WORK, CallOptions.DEFAULT.withDeadlineAfter(deadlineNanos, TimeUnit.NANOSECONDS)),
                "call",
                new StreamObserver<>() {
                    @Override
                    public void onNext(String value) {}

                    @Override
                    public void onError(Throwable t) {
                        Status.Code code = Status.fromThrowable(t).getCode();
                        switch (code) {
                            case UNAVAILABLE, RESOURCE_EXHAUSTED -> tenant.shed.incrementAndGet();
                            case DEADLINE_EXCEEDED -> tenant.timedOut.incrementAndGet();
                            default -> tenant.failed.incrementAndGet();
                        }
                        outstanding.decrementAndGet();
                    }

                    @Override
                    public void onCompleted() {
                        long latency = System.nanoTime() - sent;
                        synchronized (tenant.latencies) {
                            tenant.latencies.add(latency);
                        }
                        tenant.ok.incrementAndGet();
                        outstanding.decrementAndGet();
                    }
                });
    }

    // ---------------------------------------------------------------- the report

    static final String TABLE_HEADER =
            "| contender | polite p50 ms | polite p99 ms | polite goodput/s | noisy goodput/s | polite shed | noisy shed"
                    + " | polite timed out | noisy timed out | server in flight, mean / max | limit at end |\n"
                    + "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";

    /** @return the table's row of one contender */
    static String row(Result r) {
        return String.format(
                Locale.ROOT,
                "| %s | %.1f | %.1f | %.0f | %.0f | %d | %d | %d | %d | %.0f / %.0f | %s |%n",
                r.contender(),
                r.polite().p50Millis(),
                r.polite().p99Millis(),
                r.polite().goodputPerSecond(),
                r.noisy().goodputPerSecond(),
                r.polite().shed(),
                r.noisy().shed(),
                r.polite().timedOut(),
                r.noisy().timedOut(),
                r.meanInFlight(),
                r.maxInFlight(),
                Double.isNaN(r.finalLimit()) ? "none" : String.format(Locale.ROOT, "%.0f", r.finalLimit()));
    }

    /** @return the whole table */
    static String table(List<Result> results) {
        StringBuilder sb = new StringBuilder(TABLE_HEADER);
        for (Result r : results) {
            sb.append(row(r));
        }
        return sb.toString();
    }

    /** @return edge.md */
    static String markdown(Report report) {
        Settings s = report.settings();
        Machine m = report.machine();
        StringBuilder md = new StringBuilder();
        md.append("# Admission at the edge: a polite tenant beside a noisy one, over gRPC\n\n");
        md.append(
                "Written by `EdgeBenchmark` (`./bench.sh edge`; see the [admission guide](../guide/admission.md)).\n");
        md.append("One run on one machine: the figures compare the contenders with each other within this run.\n\n");
        md.append(String.format(
                Locale.ROOT,
                "Machine: %s%s. The whole run took %.0f s.%n%n",
                m.stamp(),
                Double.isNaN(m.loadBefore())
                        ? ""
                        : String.format(Locale.ROOT, ", load average %.1f at the start", m.loadBefore()),
                report.seconds()));
        md.append("Each contender's measured run is one window (\"iteration\") of the load guard below.\n\n");
        md.append(report.load().markdown()).append('\n');
        if (!report.load().measured()) {
            md.append("The load of other processes could not be measured: the figures may have been disturbed.\n\n");
        } else if (report.load().loaded()) {
            md.append(String.format(
                    Locale.ROOT,
                    "**This run was not quiet:** other processes used more than %.2f CPU while some contenders were"
                            + " measured (listed above). The contenders ran one after the other, so they did not all"
                            + " see the same load; read the figures as relative within this run, and the small"
                            + " differences as noise.%n%n",
                    OtherLoad.THRESHOLD_CPUS));
        } else {
            md.append("The run was quiet: no measured window had other processes above the limit.\n\n");
        }
        md.append("## Setup\n\n");
        md.append(String.format(
                Locale.ROOT,
                """
                - **Server**: grpc-java on the in-process transport (a real server, channel and interceptor chain,
                  no network), one unary method. Its handler has a knee: a call takes 8 to 12 ms, longer by the
                  factor (calls in service + 1) / %d once more than %d calls are in service, so the server answers
                  at most about %.0f calls a second however many it takes in, and each call beyond the knee slows
                  every later one. The handler holds no thread (its answer is scheduled on a timer); it keeps
                  working on a call whose client has given up, as a server that does not watch for cancellation
                  would.
                - **Load**: open loop, Poisson arrivals sent on schedule whether or not earlier calls were answered:
                  the polite tenant at %.0f calls/s, the noisy tenant at %.0f calls/s (10x), %.0f calls/s in all,
                  %.0f%% of what the server can answer. The tenant is the `x-tenant` header. Every call has a
                  deadline of %d ms.
                - **Each contender** runs %.0f s on a fresh server, after every contender has run %.0f s at half the
                  server's capacity (warm-up, not measured). Afterwards every call ends and the server finishes its
                  work before the next one starts.
                - **Measured**: per tenant, the p50 and p99 latency of the answered calls as the client sees them
                  (queueing included), goodput (calls answered within the deadline, per second), calls shed by the
                  limit (`UNAVAILABLE`, `RESOURCE_EXHAUSTED`) and calls timed out (`DEADLINE_EXCEEDED`); the server's
                  in-flight count (calls whose work has started and not ended) every %d ms.

                """,
                s.knee(),
                s.knee(),
                s.capacityPerSecond(),
                s.politeRate(),
                s.politeRate() * 10,
                s.totalRate(),
                100 * s.totalRate() / s.capacityPerSecond(),
                s.deadline().toMillis(),
                s.seconds(),
                s.warmupSeconds(),
                SAMPLE_MILLIS));
        md.append("## Contenders\n\n");
        md.append(String.format(
                Locale.ROOT,
                """
                - **%s**: the server takes every call.
                - **%s**: a `java.util.concurrent.Semaphore` of %d permits in a server interceptor:
                  `tryAcquire()` or the call is closed with `UNAVAILABLE`; no queue.
                - **%s** and **%s**: Netflix concurrency-limits 0.5.4 with its defaults (a `VegasLimit`,
                  starting at 20), acquire or reject: a call is admitted or closed with `UNAVAILABLE` on arrival,
                  and when it ends the limiter hears `onSuccess`, `onDropped` (cancelled, deadline exceeded) or
                  `onIgnore`. The partitioned one guarantees each tenant half of the limit (it may use more while
                  the total is below the limit). The `concurrency-limits-grpc` 0.5.4 artifact was not available to
                  this build, so its `ConcurrencyLimitServerInterceptor`'s wiring is reproduced over
                  `concurrency-limits-core` 0.5.4 (`NetflixServerLimit`); the limiters are Netflix's own classes.
                - **%s**: `AdmissionControl` over a handoff `Semaphore` of %d permits, `maxWait` %d ms, behind
                  `AdmissionInterceptor`: a call waits in a strictly FIFO queue, then is shed with
                  `RESOURCE_EXHAUSTED`.
                - **%s**: the same with `key(tenant)`: a `FairShareSemaphore` of %d permits, equal shares.
                - **%s**: the same with an `AdaptiveFairShare` (handoff-adaptive's defaults), starting at %d.

                Every fixed limit is set at the knee, %d, which an operator would have to know.

                """,
                EdgeContenders.NO_LIMIT,
                EdgeContenders.JUC,
                s.knee(),
                EdgeContenders.NETFLIX,
                EdgeContenders.NETFLIX_PARTITIONED,
                EdgeContenders.FIFO,
                s.knee(),
                s.maxWait().toMillis(),
                EdgeContenders.KEYED,
                s.knee(),
                EdgeContenders.ADAPTIVE,
                s.knee(),
                s.knee()));
        md.append("## Results\n\n");
        md.append(table(report.results())).append('\n');
        md.append(String.format(
                Locale.ROOT,
                "Goodput is per second of the %.0f s run (of the time the calls were sent in, if the load"
                        + " generator fell behind). \"Limit at end\" is the limiter's limit when the run ended (the"
                        + " adaptive ones move it). The load generator sent every call within %.1f ms of its"
                        + " scheduled time.%n%n",
                s.seconds(),
                report.results().stream()
                        .mapToDouble(Result::maxSendLagMillis)
                        .max()
                        .orElse(0)));
        md.append("![The server's in-flight count over time, per contender; the polite tenant's latency; goodput per"
                + " tenant](edge.png)\n\n");
        md.append("""
                ## Running it

                ```
                ./bench.sh edge            # the run above: writes docs/benchmarks/edge.md and edge.png, about 2 minutes
                ./bench.sh edge --smoke    # every contender for 1 s, writes benchmarks/target/smoke
                ```

                Options: `--seconds N` (per contender), `--warmup N`, `--rate R` (the polite tenant's calls per
                second), `--out DIR`.
                """);
        return md.toString();
    }

    /**
     * Writes {@code edge.md} and {@code edge.png} into {@code out}.
     *
     * @param out the directory
     * @param report the run
     * @throws IOException if a file cannot be written
     */
    static void write(Path out, Report report) throws IOException {
        Files.createDirectories(out);
        Files.writeString(out.resolve("edge.md"), markdown(report));
        EdgeChart.write(out.resolve("edge.png"), report);
    }

    /**
     * Runs the benchmark and writes the report.
     *
     * @param args {@code [--smoke] [--seconds N] [--warmup N] [--rate R] [--out DIR]}
     * @throws Exception if the run fails
     */
    public static void main(String[] args) throws Exception {
        Settings settings = Settings.full();
        Path out = Path.of("docs", "benchmarks");
        for (int i = 0; i < args.length; i++) {
            Settings s = settings;
            switch (args[i]) {
                case "--smoke" -> settings = Settings.smoke();
                case "--seconds" ->
                    settings = new Settings(
                            Double.parseDouble(args[++i]),
                            s.warmupSeconds(),
                            s.politeRate(),
                            s.knee(),
                            s.deadline(),
                            s.maxWait(),
                            s.executors(),
                            s.seed());
                case "--warmup" ->
                    settings = new Settings(
                            s.seconds(),
                            Double.parseDouble(args[++i]),
                            s.politeRate(),
                            s.knee(),
                            s.deadline(),
                            s.maxWait(),
                            s.executors(),
                            s.seed());
                case "--rate" ->
                    settings = new Settings(
                            s.seconds(),
                            s.warmupSeconds(),
                            Double.parseDouble(args[++i]),
                            s.knee(),
                            s.deadline(),
                            s.maxWait(),
                            s.executors(),
                            s.seed());
                case "--out" -> out = Path.of(args[++i]);
                default ->
                    throw new IllegalArgumentException("unknown argument " + args[i]
                            + "; usage: edge [--smoke] [--seconds N] [--warmup N] [--rate R] [--out DIR]");
            }
        }
        Report report = run(settings, EdgeContenders.all());
        String md = markdown(report);
        System.out.println();
        System.out.print(md);
        write(out, report);
        System.out.println("wrote " + out.resolve("edge.md") + " and " + out.resolve("edge.png"));
    }
}
