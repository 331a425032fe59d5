// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A fair share asks a user's claim after its lock, and a grant at once ({@code tryAcquire}) that
 * finds too few permits while a claim is out waits for its answer (a decline gives the permits
 * back, as if the grant never happened). Here two grants at once whose claims decline come one
 * after the other: a {@code tryAcquire} that waited for the first must wait for the second too,
 * or it answers {@code false} although no history of the calls leaves it without permits (the
 * stress run of the fair share's Lincheck test found it: two declining starts beside a
 * {@code tryAcquire}). Which of the waiting calls goes first after the first answer is up to the
 * scheduler, so each round races them again; the waits are hang detectors.
 */
class FairShareClaimsInARowTest {

    private static final long HANG_SECONDS = 30;

    /** The calls these tests watch wait for the claims until the test answers, however loaded the machine. */
    @BeforeEach
    void waitForTheTestsAnswers() {
        ProvisionalGrants.transitWaitNanos = TimeUnit.SECONDS.toNanos(HANG_SECONDS);
    }

    @AfterEach
    void restoreTheBound() {
        ProvisionalGrants.transitWaitNanos = ProvisionalGrants.TRANSIT_WAIT_NANOS;
    }

    /** Declines every grant, after {@code open}; tells when its claim is being asked. */
    private static final class SlowDecline implements Waker {
        final CountDownLatch asked = new CountDownLatch(1);
        final CountDownLatch open = new CountDownLatch(1);

        @Override
        public boolean claim() {
            asked.countDown();
            try {
                open.await(HANG_SECONDS, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return false;
        }

        @Override
        public void wake() {}
    }

    private static void awaitWaiting(Thread t) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(HANG_SECONDS);
        while (t.getState() == Thread.State.RUNNABLE || t.getState() == Thread.State.NEW) {
            assertTrue(System.nanoTime() < deadline, t + " never waited");
            Thread.sleep(1);
        }
    }

    @Test
    void aGrantAtOnceWaitsForDeclinesThatComeOneAfterTheOther() throws Exception {
        for (int round = 0; round < 40; round++) {
            // capacity 3, key 1 holds 1 and waits for 2 more (capped at 2: not servable): 2 free
            FairShareSemaphore<Integer> fair =
                    FairShareSemaphore.<Integer>builder(3).maxPermitsPerKey(2).build();
            assertTrue(fair.tryAcquire(1, 1));
            fair.acquireThen(1, 2, () -> {});
            SlowDecline first = new SlowDecline();
            SlowDecline second = new SlowDecline();
            Thread a = new Thread(() -> fair.acquireThen(0, 2, first));
            a.setDaemon(true);
            a.start();
            assertTrue(first.asked.await(HANG_SECONDS, TimeUnit.SECONDS)); // 2 in transit for key 0
            CompletableFuture<Boolean> took = new CompletableFuture<>();
            Thread b = new Thread(() -> took.complete(fair.tryAcquire(2, 1)));
            b.setDaemon(true);
            b.start();
            awaitWaiting(b); // waits for the first answer
            Thread c = new Thread(() -> fair.acquireThen(0, 2, second));
            c.setDaemon(true);
            c.start();
            awaitWaiting(c); // so does the second start
            first.open.countDown(); // declined: b and c race for the permits it gives back
            if (second.asked.await(200, TimeUnit.MILLISECONDS)) {
                awaitWaiting(b); // c went first: its claim is out, b must wait for it too
            }
            second.open.countDown();
            assertTrue(took.get(HANG_SECONDS, TimeUnit.SECONDS), "round " + round + ": " + fair);
            a.join(TimeUnit.SECONDS.toMillis(HANG_SECONDS));
            c.join(TimeUnit.SECONDS.toMillis(HANG_SECONDS));
            assertEquals(1, fair.heldPermits(2));
            assertEquals(1, fair.heldPermits(1));
            assertEquals(0, fair.heldPermits(0), "both starts declined");
        }
    }
}
