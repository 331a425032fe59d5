// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The queue's lock-free append (see FifoCore's notes, "Appending without the lock"): a
 * semaphore without a listener or queue bounds appends to a non-empty queue without the lock and
 * counts its queue when asked; one with a listener keeps counters and appends under the lock. Both
 * must answer alike, and appends racing removals at the tail, closes and shrinks must neither
 * lose nor duplicate a node. (Lincheck model-checks the same interleavings on a few operations;
 * these run many threads on real cores.)
 */
@Timeout(60) // a guard against hangs, not a speed check
class LockFreeAppendTest {

    private static final long RACE_NANOS = 1_000_000_000L;

    private static Semaphore counted(long capacity) {
        return Semaphore.builder(capacity).listener(new WaitListener() {}).build();
    }

    @Test
    void theQueueIsCountedAlikeWithAndWithoutCounters() {
        for (Semaphore s : List.of(new Semaphore(4), counted(4))) {
            assertTrue(s.tryAcquire(4));
            long[] weights = {1, 3, 2, 4, 1};
            List<Acquisition> nodes = new ArrayList<>();
            List<RecordingWaker> wakers = new ArrayList<>();
            for (long w : weights) {
                RecordingWaker waker = new RecordingWaker();
                wakers.add(waker);
                nodes.add(s.acquireThen(w, waker));
            }
            assertEquals(5, s.queueLength(), s.toString());
            assertEquals(11, s.queuedPermits(), s.toString());
            assertTrue(nodes.get(1).cancel()); // from the middle
            assertTrue(nodes.get(4).cancel()); // the tail
            assertEquals(3, s.queueLength(), s.toString());
            assertEquals(7, s.queuedPermits(), s.toString());
            s.release(4); // 1 and 2 granted in order, 1 permit handed to the head that needs 4
            assertTrue(nodes.get(0).isGranted() && nodes.get(2).isGranted(), s.toString());
            assertFalse(nodes.get(3).isGranted());
            assertEquals(1, s.queueLength(), s.toString());
            assertEquals(4, s.queuedPermits(), s.toString());
            assertEquals(0, s.availablePermits());
            RecordingWaker late = new RecordingWaker();
            Acquisition behind = s.acquireThen(1, late); // appended behind the partially served head
            assertEquals(2, s.queueLength(), s.toString());
            assertTrue(nodes.get(3).cancel()); // its permit goes on: granted to the node behind it
            assertTrue(behind.isGranted(), s.toString());
            assertEquals(0, s.queueLength(), s.toString());
            assertEquals(0, s.queuedPermits(), s.toString());
            s.release(1);
            s.release(3);
            assertEquals(4, s.availablePermits(), s.toString());
            assertEquals(
                    List.of(1, 0, 1, 0, 0),
                    wakers.stream().map(w -> w.wakes.get()).toList());
            assertEquals(1, late.wakes.get());
        }
    }

    /**
     * The race of starts and cancels goes on until at least this many nodes were started and at
     * least {@link #CANCEL_RACE_MIN_EARLY} cancels came early, or until it gives up after
     * {@link #CANCEL_RACE_GIVE_UP_NANOS}. Both counts came within a fraction of a second on 2 quiet
     * cores, within 8 s on 2 cores loaded by other builds, and within 11 s with the test pinned to
     * one CPU that a busy process shared (taskset -c 0); the test used to start and cancel 20,000
     * nodes one handoff at a time, which took 25 s of its 30 s budget on a loaded machine and
     * could not race at all on one CPU.
     */
    private static final int CANCEL_RACE_NODES = 20_000;
    /**
     * The cancels that must have come before their node was queued (they returned false at least
     * once, then withdrew it), so that the test did race cancels with starts rather than cancel
     * queued nodes. The broken variant (withdraw unlinking a node whose predecessor does not link
     * it yet) hung in all 19 runs tried, 6 of them with both threads on one CPU.
     */
    private static final int CANCEL_RACE_MIN_EARLY = 100;
    /** After this long without {@link #CANCEL_RACE_MIN_EARLY} early cancels, the test fails: it raced nothing. */
    private static final long CANCEL_RACE_GIVE_UP_NANOS = 60_000_000_000L;
    /**
     * Only turns a hang into a failure (the broken variant spins forever under the internal lock,
     * where no interrupt reaches): above the give-up, never a speed check.
     */
    private static final java.time.Duration CANCEL_RACE_HANG = java.time.Duration.ofSeconds(120);

    /**
     * A started subclass node is its owner's to cancel at once, from any thread, even while the
     * start is still appending it without the lock: the cancel must either find it not queued yet
     * (false, nothing changed) or withdraw it whole; it must never unlink a half-appended node
     * (which lost nodes, granted a cancelled one, or spun forever under the lock in review). It
     * must also have raced: at least {@link #CANCEL_RACE_MIN_EARLY} cancels came before their
     * node was queued.
     */
    @Test
    @Timeout(180) // the class's 60 s would cut CANCEL_RACE_HANG short
    void aStartedNodeCancelledWhileItIsStillBeingAppendedIsWithdrawnWhole() {
        // Preemptive: the broken variant hangs under the internal lock, where no interrupt reaches.
        CancelRace race = org.junit.jupiter.api.Assertions.assertTimeoutPreemptively(
                CANCEL_RACE_HANG,
                LockFreeAppendTest::startAndCancelAtOnce,
                "a cancel racing a start hung the semaphore");
        assertTrue(
                race.early() >= CANCEL_RACE_MIN_EARLY,
                "the cancels did not race the starts, the test checked nothing: " + race);
    }

    /**
     * What {@link #startAndCancelAtOnce} saw.
     *
     * @param nodes      nodes started (and cancelled)
     * @param raced      of those, the ones the canceller took and cancelled; the starter cancelled the others
     * @param early      cancels of the canceller that returned false at least once before they
     *                   withdrew their node: they came before the start had queued it
     * @param inTheStart those of them that returned false although the node was started already:
     *                   they ran inside the start, between its bind and its append (the broken
     *                   variant's window is the next few instructions, invisible to a correct one)
     */
    private record CancelRace(int nodes, int raced, int early, int inTheStart) {}

    /** A node whose canceller can tell whether its start has bound it yet. */
    private static final class RacedNode extends Acquisition {
        boolean started() {
            return isPending(); // nothing grants, closes or fails these nodes: pending = started
        }

        @Override
        protected void wake() {
            throw new AssertionError("a cancelled node was woken: " + this);
        }
    }

    /**
     * One turn of waiting: a spin, unless it has lasted so long that the other thread is probably
     * not running (a loaded machine), then a yield, so that a partner descheduled on the same core
     * gets it instead of waiting out a time slice of spinning.
     */
    private static void awaitTurn(int spins) {
        if (spins < 1_000) {
            Thread.onSpinWait();
        } else {
            Thread.yield();
        }
    }

    /**
     * The starter publishes each node in {@code current} just before it starts it, and never waits
     * for the canceller: whoever takes a node out of {@code current} cancels it (the starter takes
     * the one the canceller missed when it publishes the next, by then queued: that cancel must
     * succeed at once). The canceller takes the newest node and calls cancel() until it succeeds.
     * On 2 cores that lands in the start the canceller saw published; when a loaded machine runs
     * both threads on one CPU, the starter, which spends its time starting nodes, is mostly
     * preempted in a start, and the canceller that runs next takes that very node. (The test used
     * to hand each node over and wait for it to be taken; on one CPU that never raced at all.)
     */
    private static CancelRace startAndCancelAtOnce() {
        Semaphore s = new Semaphore(1);
        assertTrue(s.tryAcquire(1));
        s.acquireThen(1, () -> {}); // the queue is not empty: the started nodes append lock-free
        java.util.concurrent.atomic.AtomicReference<RacedNode> current =
                new java.util.concurrent.atomic.AtomicReference<>();
        AtomicBoolean over = new AtomicBoolean();
        java.util.concurrent.atomic.AtomicInteger raced = new java.util.concurrent.atomic.AtomicInteger();
        java.util.concurrent.atomic.AtomicInteger early = new java.util.concurrent.atomic.AtomicInteger();
        java.util.concurrent.atomic.AtomicInteger inTheStart = new java.util.concurrent.atomic.AtomicInteger();
        Thread canceller = new Thread(() -> {
            for (int idle = 0; !over.get(); ) {
                RacedNode a = current.getAndSet(null);
                if (a == null) {
                    awaitTurn(idle++);
                    continue;
                }
                idle = 0;
                boolean wasEarly = false;
                boolean wasInTheStart = false;
                for (int spins = 0; ; spins++) {
                    boolean started = a.started(); // read before the cancel: started before it ran
                    if (a.cancel()) {
                        break;
                    }
                    wasEarly = true; // false until the start has queued it
                    wasInTheStart |= started;
                    awaitTurn(spins);
                }
                if (wasEarly) {
                    early.incrementAndGet();
                }
                if (wasInTheStart) {
                    inTheStart.incrementAndGet();
                }
                raced.incrementAndGet();
            }
        });
        canceller.setDaemon(true); // if the semaphore hangs, the test fails instead of the build
        canceller.start();
        long begun = System.nanoTime();
        int nodes = 0;
        int ownCancels = 0;
        while (nodes < CANCEL_RACE_NODES
                || early.get() < CANCEL_RACE_MIN_EARLY && System.nanoTime() - begun < CANCEL_RACE_GIVE_UP_NANOS) {
            RacedNode a = new RacedNode();
            RacedNode missed =
                    current.getAndSet(a); // the canceller may call cancel() before, during or after the start
            s.startAcquisition(1, a);
            nodes++;
            if (missed != null) {
                ownCancels++;
                assertTrue(missed.cancel(), "a queued node could not be withdrawn: " + missed + " of " + s);
            }
        }
        over.set(true);
        try {
            canceller.join();
        } catch (InterruptedException e) {
            throw new AssertionError(e);
        }
        RacedNode last = current.getAndSet(null);
        if (last != null) {
            ownCancels++;
            assertTrue(last.cancel(), "a queued node could not be withdrawn: " + last + " of " + s);
        }
        assertEquals(nodes, raced.get() + ownCancels, "every node is withdrawn once");
        assertEquals(1, s.queueLength(), s.toString()); // only the first waiter is left
        s.release(1);
        assertEquals(0, s.queueLength(), s.toString());
        s.release(1);
        assertEquals(1, s.availablePermits(), s.toString());
        return new CancelRace(nodes, raced.get(), early.get(), inTheStart.get());
    }

    /**
     * Threads queue and cancel at the tail while others release and queue behind them; every
     * acquisition ends granted (and released) or cancelled, and every permit comes back.
     */
    @Test
    void appendsRacingCancelsAtTheTailLoseNoNodeAndNoPermit() throws Exception {
        for (Semaphore s : List.of(new Semaphore(2), counted(2))) {
            AtomicBoolean stop = new AtomicBoolean();
            AtomicLong granted = new AtomicLong();
            List<Thread> threads = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                boolean cancels = t % 2 == 0;
                threads.add(new Thread(() -> {
                    while (!stop.get()) {
                        long n = 1 + (System.nanoTime() & 1);
                        Acquisition a = s.acquireThen(n, () -> {});
                        if (cancels && a.cancel()) {
                            continue;
                        }
                        while (!a.isGranted()) {
                            Thread.yield(); // the holders need the cores to release
                        }
                        granted.incrementAndGet();
                        s.release(n);
                    }
                }));
            }
            threads.forEach(Thread::start);
            Thread.sleep(RACE_NANOS / 1_000_000);
            stop.set(true);
            for (Thread t : threads) {
                t.join();
            }
            assertTrue(granted.get() > 0);
            assertEquals(0, s.queueLength(), s.toString());
            assertEquals(2, s.availablePermits(), s.toString());
        }
    }

    /**
     * Nodes appended while the semaphore closes are all either closed with the rest of the queue
     * or refused as closed: none is left waiting, none is woken twice.
     */
    @Test
    void appendsRacingCloseAreEitherClosedOrRefused() throws Exception {
        for (int round = 0; round < 200; round++) {
            Semaphore s = new Semaphore(1);
            assertTrue(s.tryAcquire(1));
            s.acquireThen(1, () -> {}); // the queue is not empty: the next ones append lock-free
            ConcurrentLinkedQueue<Acquisition> nodes = new ConcurrentLinkedQueue<>();
            ConcurrentLinkedQueue<RecordingWaker> wakers = new ConcurrentLinkedQueue<>();
            Thread appender = new Thread(() -> {
                for (int i = 0; i < 50; i++) {
                    RecordingWaker w = new RecordingWaker();
                    wakers.add(w);
                    nodes.add(s.acquireThen(1, w));
                }
            });
            appender.start();
            s.close();
            appender.join();
            for (Acquisition a : nodes) {
                assertTrue(a.isClosed(), "round " + round + ": " + a + " of " + s);
            }
            for (RecordingWaker w : wakers) {
                assertEquals(1, w.wakes.get(), "round " + round);
            }
            assertEquals(0, s.queueLength());
        }
    }

    /** What a round of {@link #appendRacingFirstResize} checks once both threads are done. */
    private interface RoundCheck {
        /**
         * @param round    the round
         * @param s        its semaphore, after the resize
         * @param head     the light waiter queued before the race
         * @param appended the node the other thread started, or null if its start was refused
         */
        void check(int round, Semaphore s, Acquisition head, Acquisition appended);
    }

    /**
     * Rounds of the first resize of a fresh semaphore racing an append without the lock: each round
     * makes {@code new Semaphore(capacity)}, holds all of it, queues a light head (so the next
     * start appends lock-free behind it), then starts {@code acquire(weight)} on another thread at
     * the same moment as {@code setCapacity(resizeTo)} on this one, and checks the outcome.
     */
    private static void appendRacingFirstResize(long capacity, long weight, long resizeTo, RoundCheck check)
            throws Exception {
        java.util.concurrent.CyclicBarrier start = new java.util.concurrent.CyclicBarrier(2);
        java.util.concurrent.CyclicBarrier done = new java.util.concurrent.CyclicBarrier(2);
        java.util.concurrent.atomic.AtomicReference<Semaphore> current =
                new java.util.concurrent.atomic.AtomicReference<>();
        java.util.concurrent.atomic.AtomicReference<Acquisition> appended =
                new java.util.concurrent.atomic.AtomicReference<>();
        int rounds = 20_000;
        Thread appender = new Thread(() -> {
            try {
                for (int r = 0; r < rounds; r++) {
                    start.await();
                    try {
                        appended.set(current.get().acquireThen(weight, () -> {}));
                    } catch (IllegalArgumentException refused) {
                        appended.set(null);
                    }
                    done.await();
                }
            } catch (Exception e) {
                throw new AssertionError(e);
            }
        });
        appender.setDaemon(true);
        appender.start();
        for (int r = 0; r < rounds; r++) {
            Semaphore s = new Semaphore(capacity);
            assertTrue(s.tryAcquire(capacity));
            Acquisition head = s.acquireThen(1, () -> {});
            current.set(s);
            start.await();
            s.setCapacity(resizeTo);
            done.await();
            check.check(r, s, head, appended.get());
        }
        appender.join();
    }

    /**
     * A heavy node appended lock-free at the moment the capacity shrinks below its weight: the
     * shrink's walk must reach it and fail it, or the start must find the shrink and refuse the
     * call; a node left waiting for a capacity it can never have fails the test. (The first resize
     * seals the tail, so an append either lands before it, in the queue the shrink walks, or takes
     * the lock after it; the narrowest interleavings are a few instructions wide and these rounds
     * do not reliably hit them, see the notes.)
     */
    @Test
    void anAppendRacingAShrinkBelowItsWeightIsNeverLeftWaiting() throws Exception {
        int[] failedByTheShrink = {0};
        appendRacingFirstResize(3, 3, 2, (r, s, head, a) -> {
            if (a != null) {
                assertTrue(
                        a.failure() instanceof IllegalStateException,
                        "round " + r + ": a node of weight 3 waits on a semaphore of capacity 2: " + a + " " + s);
                failedByTheShrink[0]++;
            }
            assertEquals(1, s.queueLength(), "round " + r + ": " + s);
        });
        assertTrue(failedByTheShrink[0] > 0, "the shrink never met the appended node");
    }

    /**
     * The first resize seals the queue's tail (every later append takes the lock) while an append
     * without the lock may still be linking its node: here a growth hands a permit to the head at
     * that moment. The node being appended must stay in the queue and be granted in turn, never
     * lost (waiting forever outside the queue), granted without a permit, or linked behind the
     * settled head.
     */
    @Test
    void theFirstGrowthRacingAnAppendKeepsTheAppendedNodeQueued() throws Exception {
        appendRacingFirstResize(2, 1, 3, (r, s, head, a) -> {
            assertTrue(a != null, "round " + r + ": a start of 1 permit was refused: " + s);
            assertTrue(head.isGranted(), "round " + r); // the growth's new permit
            assertFalse(a.isGranted(), "round " + r + ": granted without a permit: " + s);
            assertEquals(1, s.queueLength(), "round " + r + ": the appended node left the queue: " + s);
            s.release(1); // the head's permit: now the appended node's
            assertTrue(a.isGranted(), "round " + r + ": " + s);
            assertEquals(0, s.queueLength(), "round " + r + ": " + s);
            s.release(2);
            s.release(1);
            assertEquals(3, s.availablePermits(), "round " + r + ": " + s);
        });
    }

    /**
     * Heavy nodes appended while the capacity shrinks below their weight and grows back: each is
     * refused at once (IllegalArgumentException, nothing queued), fails as too heavy, or is
     * granted later; nothing is left waiting and every permit comes back.
     */
    @Test
    void appendsRacingShrinksAreRefusedFailedOrGrantedAndLoseNoPermit() throws Exception {
        Semaphore s = new Semaphore(3);
        assertTrue(s.tryAcquire(3));
        s.acquireThen(1, () -> {}); // a light head, so the heavy ones append behind it
        AtomicBoolean stop = new AtomicBoolean();
        ConcurrentLinkedQueue<Acquisition> nodes = new ConcurrentLinkedQueue<>();
        AtomicLong refused = new AtomicLong();
        Thread appender = new Thread(() -> {
            while (!stop.get()) {
                try {
                    nodes.add(s.acquireThen(3, () -> {}));
                } catch (IllegalArgumentException tooHeavyNow) {
                    refused.incrementAndGet();
                }
            }
        });
        appender.start();
        long deadline = System.nanoTime() + RACE_NANOS;
        while (System.nanoTime() < deadline) {
            s.setCapacity(2);
            s.setCapacity(3);
        }
        stop.set(true);
        appender.join();
        // The capacity is 3 again. Release the 3 held permits: the head (1) and then every heavy
        // node still waiting is granted in turn, each releasing before the next.
        s.release(3);
        long grantedHeavy = 0;
        long failed = 0;
        s.release(1); // the light head's permit
        for (Acquisition a : nodes) {
            if (a.isGranted()) {
                grantedHeavy++;
                s.release(3);
            } else {
                assertTrue(a.failure() instanceof IllegalStateException, a + ": neither granted nor failed");
                failed++;
            }
        }
        assertEquals(nodes.size(), grantedHeavy + failed);
        assertTrue(failed > 0 && refused.get() > 0, "the shrinks never met a waiting heavy node");
        assertEquals(0, s.queueLength(), s.toString());
        assertEquals(3, s.availablePermits(), s.toString());
    }
}
