// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.handoff.Acquisition;
import dev.handoff.Mutex;
import dev.handoff.Permits;
import dev.handoff.RwLock;
import dev.handoff.Semaphore;
import dev.handoff.SemaphoreClosedException;
import dev.handoff.Waker;
import dev.handoff.spi.Adapters;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every documented asynchronous or callback pattern that acquires and releases (README, the
 * Javadoc of java-core, the samples), copied here as documented, run through each way it can end:
 * the work after the grant succeeds, fails, or throws; the acquisition itself fails (closed before
 * the call, closed while waiting, timed out or cancelled while another holder keeps the permits).
 * The rule checked: a pattern releases exactly once if its permits were granted, and never if they
 * were not.
 *
 * <p>How a wrong release shows: another party, the <em>bystander</em>, holds {@link #BYSTANDER}
 * permits across every scenario, and in the failure scenarios a <em>blocker</em> holds the other
 * {@link #N}. A pattern that releases what it never got, or releases twice, gives back their
 * permits, so one of their own releases later throws ("exceeds the permits held"); a pattern that
 * leaks leaves {@code availablePermits()} short. Each scenario ends with the holders releasing and
 * {@code availablePermits() == capacity()}.
 *
 * <p>Each pattern keeps the documented code verbatim between {@code // ---- doc} and
 * {@code // ---- end} markers, with the documented names bound to the test's fakes; what is around
 * the markers only reports the outcome to the test.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class DocumentedPatternsTest {

    static final long CAPACITY = 10;
    /** Held by another party throughout: a pattern that releases twice takes these. */
    static final long BYSTANDER = 6;
    /** What each pattern takes; a blocker holds as many when the pattern must wait. */
    static final long N = 4;

    static final Duration NO_TIMEOUT_IN_PRACTICE = Duration.ofSeconds(60);
    static final Duration SHORT_TIMEOUT = Duration.ofMillis(50);

    /** Where the fake downloads complete: a little later, on another thread. */
    static final Executor LATER = CompletableFuture.delayedExecutor(5, TimeUnit.MILLISECONDS);

    /** What the work after the grant does. */
    enum Work {
        /** Its stage completes normally, a little later, on another thread. */
        SUCCEEDS,
        /** Its stage fails, a little later, on another thread. */
        FAILS,
        /** Throws instead of returning a stage (synchronous work: throws). */
        THROWS
    }

    /** How the acquisition itself fails, while the bystander and a blocker hold every permit. */
    enum AcquisitionFailure {
        /** The semaphore was closed before the pattern started. */
        CLOSED_BEFORE,
        /** The semaphore is closed while the pattern waits. */
        CLOSED_WHILE_WAITING,
        /** The pattern's own timeout fires while it waits. */
        TIMED_OUT,
        /** The pattern's caller gives up while it waits (cancel, interrupt, an early deadline). */
        CANCELLED
    }

    /** The fake download or work: counts its runs and sees how many permits were free meanwhile. */
    static final class FakeWork {
        final Work kind;
        final Semaphore semaphore;
        final AtomicInteger runs = new AtomicInteger();
        volatile long availableWhileRunning = -1;

        FakeWork(Work kind, Semaphore semaphore) {
            this.kind = kind;
            this.semaphore = semaphore;
        }

        private void begin() {
            runs.incrementAndGet();
            if (semaphore != null) {
                availableWhileRunning = semaphore.availablePermits();
            }
        }

        /** An asynchronous download: a stage completed later, or a synchronous throw. */
        CompletableFuture<String> download() {
            begin();
            CompletableFuture<String> body = new CompletableFuture<>();
            switch (kind) {
                case SUCCEEDS:
                    LATER.execute(() -> body.complete("body"));
                    return body;
                case FAILS:
                    LATER.execute(() -> body.completeExceptionally(new IOException("connection reset")));
                    return body;
                default:
                    throw new IllegalStateException("no route to host");
            }
        }

        /** Synchronous work. */
        void run() {
            begin();
            if (kind != Work.SUCCEEDS) {
                throw new IllegalStateException("the work failed");
            }
        }
    }

    /**
     * A started pattern.
     *
     * @param outcome settles once the pattern is done (its work ended and what it holds was
     *     released, or its acquisition failed); normally iff the work succeeded
     * @param giveUp what the pattern's caller does to give up while it waits
     */
    record Started(CompletableFuture<?> outcome, Runnable giveUp) {}

    /** The documented patterns over a {@link Semaphore}, each taking {@link #N} permits. */
    enum Pattern {
        /** The example of {@code Semaphore.acquireAsync}: release chained on the work after the grant. */
        ACQUIRE_ASYNC_CHAIN(true, true) {
            @Override
            Started start(Semaphore budget, FakeWork w, Duration timeout, ScheduledExecutorService loop) {
                CompletableFuture<Permits> acquisition = budget.acquireAsync(N); // kept to cancel it
                CompletableFuture<String> outcome =
                        // ---- doc: Semaphore.acquireAsync(long), with item.size() = N and download(item) =
                        // w.download()
                        acquisition
                                .orTimeout(timeout.toMillis(), TimeUnit.MILLISECONDS) // fails the wait: nothing held
                                .thenCompose(
                                        permits -> { // runs only after a grant
                                            try {
                                                return w.download().whenComplete((body, error) -> permits.release());
                                            } catch (Throwable t) { // download threw: no stage to wait for
                                                permits.release();
                                                throw t;
                                            }
                                        });
                // ---- end
                return new Started(outcome, () -> acquisition.cancel(true));
            }
        },

        /** README, "Every face, in Java", 3: {@code acquireAsync(..).orTimeout(..).thenAccept(try-with-resources)}. */
        README_THEN_ACCEPT(true, true) {
            @Override
            Started start(Semaphore budget, FakeWork w, Duration timeout, ScheduledExecutorService loop) {
                CompletableFuture<Permits> acquisition = budget.acquireAsync(N); // kept to cancel it
                CompletableFuture<Void> outcome =
                        // ---- doc: README "Every face", 3, with 200 = N and work() = w.run()
                        acquisition
                                .orTimeout(
                                        timeout.toMillis(),
                                        TimeUnit.MILLISECONDS) // fails the wait: nothing held, nothing released
                                .thenAccept(permits -> {
                                    try (permits) {
                                        w.run();
                                    }
                                }); // released when the block ends
                // ---- end
                return new Started(outcome, () -> acquisition.cancel(true));
            }
        },

        /** The example of {@code Semaphore.withPermitsAsync} (also README "Every face", 3b). */
        WITH_PERMITS_ASYNC(true, true) {
            @Override
            Started start(Semaphore budget, FakeWork w, Duration timeout, ScheduledExecutorService loop) {
                // ---- doc: Semaphore.withPermitsAsync, with request.bytes() = N and client.sendAsync(request) =
                // w.download()
                CompletableFuture<String> r =
                        budget.withPermitsAsync(N, () -> w.download()); // released when the send completes
                // ---- end
                r.orTimeout(timeout.toMillis(), TimeUnit.MILLISECONDS);
                return new Started(r, () -> r.cancel(true));
            }
        },

        /** {@link MemoryBudgetSample#withinBudget}, the sample's pattern, called as the sample calls it. */
        MEMORY_BUDGET_SAMPLE(true, true) {
            @Override
            Started start(Semaphore budget, FakeWork w, Duration timeout, ScheduledExecutorService loop) {
                CompletableFuture<String> download = MemoryBudgetSample.withinBudget(budget, N, w::download);
                download.orTimeout(timeout.toMillis(), TimeUnit.MILLISECONDS);
                return new Started(download, () -> download.cancel(true));
            }
        },

        /** README, "Every face, in Java", 2: a callback, a latch, a timed wait and {@code cancel()}. */
        README_CALLBACK_LATCH(true, true) {
            @Override
            Started start(Semaphore budget, FakeWork w, Duration timeout, ScheduledExecutorService loop) {
                CompletableFuture<Void> outcome = new CompletableFuture<>();
                Thread caller = new Thread(
                        () -> {
                            try {
                                // ---- doc: README "Every face", 2, with 300 = N, 1 s = timeout and work() = w.run()
                                CountDownLatch done = new CountDownLatch(1);
                                Acquisition a = budget.acquireThen(N, done::countDown);
                                boolean woken;
                                try {
                                    woken = done.await(timeout.toMillis(), TimeUnit.MILLISECONDS);
                                } catch (InterruptedException e) {
                                    if (!a.cancel() && a.isGranted()) budget.release(N); // the grant won the race
                                    throw e;
                                }
                                if (!woken && a.cancel()) {
                                    // gave up: nothing held, and the waker will never run
                                    throw new TimeoutException("gave up"); // (test: report)
                                } else if (a.isGranted()) {
                                    try {
                                        w.run();
                                    } finally {
                                        budget.release(N);
                                    }
                                } else { // else: closed, nothing held
                                    throw new SemaphoreClosedException("closed: " + a); // (test: report)
                                }
                                // ---- end
                                outcome.complete(null);
                            } catch (Throwable t) {
                                outcome.completeExceptionally(t);
                            }
                        },
                        "readme-callback-latch");
                caller.start();
                return new Started(outcome, caller::interrupt);
            }
        },

        /**
         * The example of {@link Acquisition} (a deadline on an event loop), which includes the
         * example of {@code Semaphore.acquireThen(long, Waker)} (the same {@code Send} without a
         * deadline).
         */
        CALLBACK_SEND_ON_LOOP(true, true) {
            @Override
            Started start(Semaphore budget, FakeWork w, Duration timeout, ScheduledExecutorService loop) {
                Send send = new Send(budget, w, timeout, loop);
                send.loop.execute(send::start);
                return new Started(send.outcome, () -> send.loop.execute(send::deadline));
            }
        },

        /** The example of {@code Adapters.startAcquisition} and {@link Acquisition}: an acquisition that is its own waker. */
        SIGNAL_SUBCLASS(false, true) {
            @Override
            Started start(Semaphore semaphore, FakeWork w, Duration timeout, ScheduledExecutorService loop) {
                CompletableFuture<Void> outcome = new CompletableFuture<>();
                Thread caller = new Thread(
                        () -> {
                            try {
                                // ---- doc: Adapters.startAcquisition, with 4 = N and work() = w.run()
                                Signal s = Adapters.startAcquisition(semaphore, N, new Signal());
                                try {
                                    s.done.await();
                                } catch (InterruptedException e) {
                                    if (!s.cancel() && s.isGranted()) semaphore.release(N); // the grant won the race
                                    throw e;
                                }
                                if (s.isGranted()) {
                                    try {
                                        w.run();
                                    } finally {
                                        semaphore.release(N);
                                    }
                                } // else: nothing held
                                // ---- end
                                else {
                                    throw new SemaphoreClosedException("not granted: " + s); // (test: report)
                                }
                                outcome.complete(null);
                            } catch (Throwable t) {
                                outcome.completeExceptionally(t);
                            }
                        },
                        "signal-subclass");
                caller.start();
                return new Started(outcome, caller::interrupt);
            }
        },

        /** The example of {@link Waker}: a lambda waker that posts {@code sendBatch} to an event loop. */
        WAKER_LAMBDA_ON_LOOP(false, false) {
            @Override
            Started start(Semaphore semaphore, FakeWork w, Duration timeout, ScheduledExecutorService loop) {
                Batch batch = new Batch(semaphore, w, loop);
                batch.loop.execute(batch::submit);
                return new Started(batch.outcome, () -> {
                    throw new UnsupportedOperationException("this pattern has no way to give up");
                });
            }
        };

        /** Whether the pattern has a timeout of its own. */
        final boolean hasTimeout;
        /** Whether the pattern's caller can give up while it waits. */
        final boolean canGiveUp;

        Pattern(boolean hasTimeout, boolean canGiveUp) {
            this.hasTimeout = hasTimeout;
            this.canGiveUp = canGiveUp;
        }

        /** Starts the pattern for {@link #N} permits of {@code budget} around {@code w}. */
        abstract Started start(Semaphore budget, FakeWork w, Duration timeout, ScheduledExecutorService loop);
    }

    /**
     * The event loop as the callback examples see it: tasks run on the test's loop thread and
     * settle {@code outcome} only once a task has returned (so after its own {@code finally}, where
     * the examples release): normally if the work was sent, exceptionally if the task threw,
     * instead of the exception vanishing into the executor.
     */
    static final class Loop {
        private final ScheduledExecutorService thread;
        private final CompletableFuture<Void> outcome;
        /** Set by a successful send(); the outcome completes when the task that sent returns. */
        boolean sent;

        Loop(ScheduledExecutorService thread, CompletableFuture<Void> outcome) {
            this.thread = thread;
            this.outcome = outcome;
        }

        void execute(Runnable task) {
            thread.execute(() -> report(task));
        }

        void schedule(Runnable task, long delay, TimeUnit unit) {
            thread.schedule(() -> report(task), delay, unit);
        }

        private void report(Runnable task) {
            try {
                task.run();
            } catch (Throwable t) {
                outcome.completeExceptionally(t);
                return;
            }
            if (sent) {
                outcome.complete(null);
            }
        }
    }

    /** The {@code Send} of {@link Acquisition}'s example. Touched only on the loop thread. */
    static final class Send implements Waker {
        private final Semaphore budget;
        private final long bytes = N;
        private final FakeWork w;
        private final Duration timeout;
        private final Loop loop;
        /** The request's fate: completed once send() returned, failed by fail(..) or by send() throwing. */
        final CompletableFuture<Void> outcome = new CompletableFuture<>();

        Send(Semaphore budget, FakeWork w, Duration timeout, ScheduledExecutorService loopThread) {
            this.budget = budget;
            this.w = w;
            this.timeout = timeout;
            this.loop = new Loop(loopThread, outcome);
        }

        // ---- doc: Acquisition (class Javadoc), with request.fail(..) = fail(..) and send(request) =
        //      send(); deadline() is the scheduled lambda, named so that the test can also run it
        //      early ("the caller gives up")
        private Acquisition acquisition;

        void start() {
            acquisition = budget.acquireThen(bytes, this);
            loop.schedule(this::deadline, timeout.toMillis(), TimeUnit.MILLISECONDS);
        }

        void deadline() {
            if (acquisition.cancel()) fail("timed out waiting for " + bytes + " bytes");
        }

        public void wake() {
            loop.execute(this::run);
        } // never runs after a cancel() that won

        private void run() {
            if (!acquisition.isGranted()) {
                fail("shutting down");
                return;
            } // nothing held
            try {
                send();
            } finally {
                budget.release(bytes);
            }
        }
        // ---- end

        private void send() {
            w.run();
            loop.sent = true;
        }

        private void fail(String why) {
            outcome.completeExceptionally(new IllegalStateException(why));
        }
    }

    /** The {@code Signal} of the example of {@code Adapters} and {@code Acquisition}. */
    // ---- doc: Adapters / Acquisition
    static final class Signal extends Acquisition {
        final CountDownLatch done = new CountDownLatch(1);

        @Override
        protected void wake() {
            done.countDown();
        }
    }
    // ---- end

    /** The waker example of {@link Waker}, on an event loop. Touched only on the loop thread. */
    static final class Batch {
        private final Semaphore semaphore;
        private final FakeWork w;
        private final Loop loop;
        final CompletableFuture<Void> outcome = new CompletableFuture<>();
        private Acquisition pending;

        Batch(Semaphore semaphore, FakeWork w, ScheduledExecutorService loopThread) {
            this.semaphore = semaphore;
            this.w = w;
            this.loop = new Loop(loopThread, outcome);
        }

        void submit() {
            // ---- doc: Waker
            pending = semaphore.acquireThen(4, () -> loop.execute(this::sendBatch)); // called on the loop
            // ---- end
        }

        // ---- doc: Waker, with batch.fail(..) = failBatch(..) and send(batch) = send()
        void sendBatch() {
            if (!pending.isGranted()) {
                failBatch("closed");
                return;
            } // nothing held
            try {
                send();
            } finally {
                semaphore.release(4);
            }
        }
        // ---- end

        private void send() {
            w.run();
            loop.sent = true;
        }

        private void failBatch(String why) {
            outcome.completeExceptionally(new IllegalStateException(why));
        }
    }

    private ScheduledExecutorService loop;

    @BeforeEach
    void startLoop() {
        loop = Executors.newSingleThreadScheduledExecutor(task -> new Thread(task, "event-loop"));
    }

    @AfterEach
    void stopLoop() throws InterruptedException {
        loop.shutdownNow();
        assertTrue(loop.awaitTermination(10, TimeUnit.SECONDS));
    }

    static Stream<Arguments> patternsAndWork() {
        List<Arguments> all = new ArrayList<>();
        for (Pattern p : Pattern.values()) {
            for (Work w : Work.values()) {
                all.add(Arguments.of(p, w));
            }
        }
        return all.stream();
    }

    static Stream<Arguments> patternsAndAcquisitionFailures() {
        List<Arguments> all = new ArrayList<>();
        for (Pattern p : Pattern.values()) {
            for (AcquisitionFailure f : AcquisitionFailure.values()) {
                if ((f == AcquisitionFailure.TIMED_OUT && !p.hasTimeout)
                        || (f == AcquisitionFailure.CANCELLED && !p.canGiveUp)) {
                    continue;
                }
                all.add(Arguments.of(p, f));
            }
        }
        return all.stream();
    }

    // ------------------------------------------------------------------ after the grant

    @ParameterizedTest(name = "{0}, work {1}")
    @MethodSource("patternsAndWork")
    void afterTheGrantThePermitsComeBackExactlyOnce(Pattern pattern, Work kind) throws Exception {
        Semaphore s = new Semaphore(CAPACITY);
        assertTrue(s.tryAcquire(BYSTANDER));
        FakeWork w = new FakeWork(kind, s);

        Started started = pattern.start(s, w, NO_TIMEOUT_IN_PRACTICE, loop);
        Throwable failure = settle(started.outcome());

        assertEquals(1, w.runs.get(), "the work ran once");
        assertEquals(0, w.availableWhileRunning, "the work ran holding the pattern's permits");
        if (kind == Work.SUCCEEDS) {
            assertNull(failure, "the pattern succeeded");
        } else {
            assertTrue(failure != null, "the work's failure reaches the pattern's outcome");
        }
        assertEquals(CAPACITY - BYSTANDER, s.availablePermits(), "the pattern gave its permits back");
        quiet();
        s.release(BYSTANDER); // throws if the pattern released twice: it would have taken these
        assertAllBack(s);
    }

    // ------------------------------------------------------------------ the acquisition fails

    @ParameterizedTest(name = "{0}, {1}")
    @MethodSource("patternsAndAcquisitionFailures")
    void aFailedAcquisitionReleasesNothing(Pattern pattern, AcquisitionFailure how) throws Exception {
        Semaphore s = new Semaphore(CAPACITY);
        assertTrue(s.tryAcquire(BYSTANDER));
        assertTrue(s.tryAcquire(N)); // the blocker: the pattern has to wait
        FakeWork w = new FakeWork(Work.SUCCEEDS, s);
        if (how == AcquisitionFailure.CLOSED_BEFORE) {
            s.close();
        }

        Started started =
                pattern.start(s, w, how == AcquisitionFailure.TIMED_OUT ? SHORT_TIMEOUT : NO_TIMEOUT_IN_PRACTICE, loop);
        if (how == AcquisitionFailure.CLOSED_WHILE_WAITING || how == AcquisitionFailure.CANCELLED) {
            awaitTrue(() -> s.queueLength() == 1, "the pattern waits");
            if (how == AcquisitionFailure.CLOSED_WHILE_WAITING) {
                s.close();
            } else {
                started.giveUp().run();
            }
        }
        Throwable failure = settle(started.outcome());

        assertTrue(failure != null, "the pattern failed");
        if (how == AcquisitionFailure.CLOSED_BEFORE || how == AcquisitionFailure.CLOSED_WHILE_WAITING) {
            assertTrue(
                    causes(failure, SemaphoreClosedException.class)
                            || failure.getMessage().contains("shutting down")
                            || failure.getMessage().contains("closed"),
                    () -> "closed, not " + failure);
        }
        assertEquals(0, w.runs.get(), "the work never ran");
        awaitTrue(
                () -> s.queueLength() == 0,
                "the wait was withdrawn"); // orTimeout withdraws just after failing the result
        assertEquals(0, s.availablePermits(), "the failed acquisition released nothing (yet)");

        s.release(N); // the blocker leaves; throws if the failed acquisition had released its permits
        quiet();
        assertEquals(0, w.runs.get(), "the withdrawn wait was not granted by the blocker's release");
        assertEquals(CAPACITY - BYSTANDER, s.availablePermits());
        s.release(BYSTANDER);
        assertAllBack(s);
    }

    // ------------------------------------------------------------------ races

    /**
     * The pattern's timeout or its caller's giving up races the blocker's release, many times:
     * whichever wins, the count comes back exactly.
     */
    @ParameterizedTest(name = "{0}")
    @EnumSource(value = Pattern.class, names = "WAKER_LAMBDA_ON_LOOP", mode = EnumSource.Mode.EXCLUDE)
    void givingUpRacingTheGrantLeavesTheCountExact(Pattern pattern) throws Exception {
        int granted = 0;
        int notGranted = 0;
        int rounds = Boolean.getBoolean("handoff.quick") ? 40 : 150; // the quick build: fewer rounds
        for (int i = 0; i < rounds; i++) {
            Semaphore s = new Semaphore(CAPACITY);
            assertTrue(s.tryAcquire(BYSTANDER));
            assertTrue(s.tryAcquire(N));
            FakeWork w = new FakeWork(Work.SUCCEEDS, s);
            boolean byTimeout = pattern.hasTimeout && (i % 2 == 0 || !pattern.canGiveUp);
            Started started = pattern.start(s, w, byTimeout ? Duration.ofMillis(1) : NO_TIMEOUT_IN_PRACTICE, loop);
            awaitTrue(() -> s.queueLength() == 1 || started.outcome().isDone(), "the pattern waits");
            long spinNanos = ThreadLocalRandom.current().nextLong(1_500_000);
            Thread blocker = new Thread(() -> {
                spin(spinNanos);
                s.release(N);
            });
            blocker.start();
            if (!byTimeout) {
                spin(ThreadLocalRandom.current().nextLong(1_500_000));
                started.giveUp().run();
            }
            blocker.join();
            settle(started.outcome());
            awaitTrue(
                    () -> s.availablePermits() == CAPACITY - BYSTANDER,
                    () -> "the pattern's permits back: " + s + ", work runs " + w.runs);
            assertTrue(w.runs.get() <= 1);
            if (w.runs.get() == 1) {
                granted++;
            } else {
                notGranted++;
            }
            quiet();
            s.release(BYSTANDER);
            assertAllBack(s);
        }
        System.out.printf("%s: granted (the work ran) %d times, withdrawn %d times%n", pattern, granted, notGranted);
    }

    // ------------------------------------------------------------------ locks

    @ParameterizedTest(name = "work {0}")
    @EnumSource(Work.class)
    void withLockAsyncUnlocksExactlyOnceAfterTheWork(Work kind) throws Exception {
        Mutex mutex = new Mutex();
        FakeWork w = new FakeWork(kind, null);

        CompletableFuture<String> saved = mutex.withLockAsync(w::download);
        CompletableFuture<Permits> next = mutex.lockAsync(); // queued behind it (granted at once after THROWS)
        Throwable failure = settle(saved);

        assertEquals(kind == Work.SUCCEEDS, failure == null, () -> String.valueOf(failure));
        Permits nextHolder = next.get(10, TimeUnit.SECONDS);
        quiet();
        assertTrue(mutex.isLocked(), "the next holder has the lock: withLockAsync did not unlock twice");
        assertTrue(nextHolder.release(), "the next holder's unlock, through its handle");
        assertFalse(mutex.isLocked());
        assertEquals(0, mutex.queueLength());
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(
            value = AcquisitionFailure.class,
            names = {"TIMED_OUT", "CANCELLED"})
    void withLockAsyncThatNeverGotTheLockUnlocksNothing(AcquisitionFailure how) throws Exception {
        Mutex mutex = new Mutex();
        assertTrue(mutex.tryLock()); // the holder
        FakeWork w = new FakeWork(Work.SUCCEEDS, null);

        CompletableFuture<String> saved = mutex.withLockAsync(w::download);
        if (how == AcquisitionFailure.TIMED_OUT) {
            saved.orTimeout(SHORT_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        } else {
            awaitTrue(() -> mutex.queueLength() == 1, "withLockAsync waits");
            saved.cancel(true);
        }
        Throwable failure = settle(saved);

        assertTrue(
                failure instanceof TimeoutException || failure instanceof CancellationException,
                String.valueOf(failure));
        awaitTrue(
                () -> mutex.queueLength() == 0,
                "the wait was withdrawn"); // orTimeout withdraws just after failing the result
        assertTrue(mutex.isLocked(), "still the holder's");
        mutex.unlock(); // the holder's unlock: throws if the failed wait had unlocked
        quiet();
        assertFalse(mutex.isLocked());
        assertEquals(0, w.runs.get());
    }

    /** README, Mutex: {@code balanceAsync()} through {@code withLockAsync}, its caller giving up. */
    @Test
    void readmeBalanceAsyncGivenUpBeforeTheGrantLeavesTheLockFree() throws Exception {
        Mutex mutex = new Mutex();
        long balance = 42;
        assertTrue(mutex.tryLock());
        // ---- doc: README, Mutex, balanceAsync()
        CompletableFuture<Long> r = mutex.withLockAsync(() -> CompletableFuture.completedFuture(balance));
        // ---- end
        r.orTimeout(SHORT_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        assertInstanceOf(TimeoutException.class, settle(r));
        awaitTrue(() -> mutex.queueLength() == 0, "the wait was withdrawn"); // just after failing the result
        mutex.unlock();
        assertFalse(mutex.isLocked(), "nothing leaked");

        assertEquals(
                42L,
                mutex.withLockAsync(() -> CompletableFuture.completedFuture(balance))
                        .get(10, TimeUnit.SECONDS));
        assertFalse(mutex.isLocked());
    }

    /**
     * Why the README and the Javadoc hand out {@code withLockAsync}'s future rather than a raw
     * {@code lockAsync().thenApply(unlock in finally)} chain: when the chain's result is cancelled
     * or timed out before the grant, the wait goes on, the grant comes, and the stage that would
     * unlock is skipped (a completed {@link CompletableFuture} never runs its function): the lock
     * leaks. {@code withLockAsync} withdraws the wait instead.
     */
    @Test
    void aRawChainWhoseResultIsGivenUpLeaksWhichIsWhyTheDocsUseWithLockAsync() throws Exception {
        Mutex mutex = new Mutex();
        assertTrue(mutex.tryLock());
        CompletableFuture<Long> raw = mutex.lockAsync().thenApply(granted -> {
            try {
                return 42L;
            } finally {
                mutex.unlock();
            }
        });
        raw.cancel(true);
        mutex.unlock(); // the holder leaves: the still-waiting lockAsync gets the lock
        assertTrue(mutex.isLocked(), "the raw chain leaked the lock (the JDK skips the cancelled stage)");
        mutex.unlock(); // clean up the leak

        assertTrue(mutex.tryLock());
        CompletableFuture<Long> scoped = mutex.withLockAsync(() -> CompletableFuture.completedFuture(42L));
        scoped.cancel(true);
        mutex.unlock();
        assertFalse(mutex.isLocked(), "withLockAsync withdrew the wait: nothing leaked");
    }

    @ParameterizedTest(name = "{0}, work {1}")
    @MethodSource("readOrWriteAndWork")
    void withReadOrWriteLockAsyncReleasesExactlyOnceAfterTheWork(boolean write, Work kind) throws Exception {
        RwLock lock = new RwLock(4);
        FakeWork w = new FakeWork(kind, null);

        CompletableFuture<String> r =
                write ? lock.withWriteLockAsync(w::download) : lock.withReadLockAsync(w::download);
        CompletableFuture<RwLock.WritePermits> next = lock.writeLockAsync(); // queued behind it (at once after THROWS)
        Throwable failure = settle(r);

        assertEquals(kind == Work.SUCCEEDS, failure == null, () -> String.valueOf(failure));
        Permits nextWriter = next.get(10, TimeUnit.SECONDS);
        quiet();
        assertTrue(lock.isWriteLocked(), "the next writer holds the lock: nothing was released twice");
        assertTrue(nextWriter.release(), "the next writer's unlock, through its handle");
        assertRwLockFree(lock);
    }

    @ParameterizedTest(name = "{0}, {1}")
    @MethodSource("readOrWriteAndGivingUp")
    void withReadOrWriteLockAsyncThatNeverGotTheLockReleasesNothing(boolean write, AcquisitionFailure how)
            throws Exception {
        RwLock lock = new RwLock(4);
        assertTrue(write ? lock.tryReadLock() : lock.tryWriteLock()); // the holder the pattern waits for
        FakeWork w = new FakeWork(Work.SUCCEEDS, null);

        CompletableFuture<String> r =
                write ? lock.withWriteLockAsync(w::download) : lock.withReadLockAsync(w::download);
        if (how == AcquisitionFailure.TIMED_OUT) {
            r.orTimeout(SHORT_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        } else {
            awaitTrue(() -> lock.queueLength() == 1, "the pattern waits");
            r.cancel(true);
        }
        Throwable failure = settle(r);

        assertTrue(
                failure instanceof TimeoutException || failure instanceof CancellationException,
                String.valueOf(failure));
        awaitTrue(
                () -> lock.queueLength() == 0,
                "the wait was withdrawn"); // orTimeout withdraws just after failing the result
        if (write) {
            lock.readUnlock(); // throws if the failed writer had released
        } else {
            lock.writeUnlock(); // throws if the failed reader had released
        }
        quiet();
        assertRwLockFree(lock);
        assertEquals(0, w.runs.get());
    }

    static Stream<Arguments> readOrWriteAndWork() {
        List<Arguments> all = new ArrayList<>();
        for (boolean write : new boolean[] {false, true}) {
            for (Work w : Work.values()) {
                all.add(Arguments.of(write, w));
            }
        }
        return all.stream();
    }

    static Stream<Arguments> readOrWriteAndGivingUp() {
        List<Arguments> all = new ArrayList<>();
        for (boolean write : new boolean[] {false, true}) {
            all.add(Arguments.of(write, AcquisitionFailure.TIMED_OUT));
            all.add(Arguments.of(write, AcquisitionFailure.CANCELLED));
        }
        return all.stream();
    }

    // ------------------------------------------------------------------ helpers

    /** Waits for {@code f} to settle; returns its failure (unwrapped), or null if it completed normally. */
    static Throwable settle(CompletableFuture<?> f) throws InterruptedException {
        try {
            f.get(30, TimeUnit.SECONDS);
            return null;
        } catch (ExecutionException e) {
            return e.getCause();
        } catch (CancellationException e) {
            return e;
        } catch (TimeoutException e) {
            return fail("the pattern never settled: " + f);
        }
    }

    static boolean causes(Throwable t, Class<? extends Throwable> type) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (type.isInstance(c)) {
                return true;
            }
        }
        return false;
    }

    /** Gives a late (wrong) release the time to land before the holders release theirs. */
    static void quiet() throws InterruptedException {
        Thread.sleep(15);
    }

    static void assertAllBack(Semaphore s) {
        assertEquals(0, s.queueLength());
        assertEquals(s.capacity(), s.availablePermits(), () -> "every permit back, none twice: " + s);
    }

    static void assertRwLockFree(RwLock lock) {
        assertFalse(lock.isWriteLocked());
        assertEquals(0, lock.readLockCount());
        assertEquals(0, lock.queueLength());
        assertTrue(lock.tryWriteLock(), "every read permit is back");
        lock.writeUnlock();
    }

    static void awaitTrue(BooleanSupplier condition, String what) throws InterruptedException {
        awaitTrue(condition, () -> what);
    }

    static void awaitTrue(BooleanSupplier condition, java.util.function.Supplier<String> what)
            throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                fail("timed out waiting until " + what.get());
            }
            Thread.sleep(1);
        }
    }

    static void spin(long nanos) {
        long end = System.nanoTime() + nanos;
        while (System.nanoTime() < end) {
            Thread.onSpinWait();
        }
    }
}
