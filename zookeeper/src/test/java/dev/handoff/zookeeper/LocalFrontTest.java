// SPDX-License-Identifier: Apache-2.0
package dev.handoff.zookeeper;

import static dev.handoff.zookeeper.Clients.await;
import static dev.handoff.zookeeper.Clients.children;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.curator.framework.CuratorFramework;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Many callers of one JVM behind one znode; the block comes back when the JVM is idle, or is lost with the session. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class LocalFrontTest extends ServerPerTest {

    @Test
    void manyThreadsOneNodeNeverAboveTheBudget() throws Exception {
        CuratorFramework c1 = clients.start();
        CuratorFramework c2 = clients.start();
        LocalFront f1 = new ZooKeeperSemaphore(c1, path, 6).withLocalFront(3);
        LocalFront f2 = new ZooKeeperSemaphore(c2, path, 6).withLocalFront(3);
        AtomicLong inUse = new AtomicLong();
        AtomicLong peak = new AtomicLong();
        AtomicLong maxNodes = new AtomicLong();
        List<Thread> threads = new ArrayList<>();
        for (LocalFront f : List.of(f1, f2)) {
            for (int t = 0; t < 8; t++) {
                Thread th = new Thread(() -> {
                    try {
                        for (int i = 0; i < 30; i++) {
                            long n = 1 + (i % 2);
                            try (Lease lease = f.acquireBlocking(n)) {
                                peak.accumulateAndGet(inUse.addAndGet(n), Math::max);
                                maxNodes.accumulateAndGet(children(c1, path).size(), Math::max);
                                inUse.addAndGet(-n);
                            }
                        }
                    } catch (Exception e) {
                        throw new AssertionError(e);
                    }
                });
                th.start();
                threads.add(th);
            }
        }
        for (Thread th : threads) {
            th.join(30_000);
            assertFalse(th.isAlive());
        }
        assertTrue(peak.get() <= 6, "peak " + peak.get());
        assertTrue(maxNodes.get() <= 2, "one node per front at most, saw " + maxNodes.get());
        await("both blocks returned", () -> !f1.holdsBlock() && !f2.holdsBlock());
        await("no node left", () -> count(c1) == 0);
    }

    @Test
    void theBlockIsTakenOnDemandAndReturnedWhenIdle() throws Exception {
        CuratorFramework c = clients.start();
        ZooKeeperSemaphore cluster = new ZooKeeperSemaphore(c, path, 4);
        LocalFront front = cluster.withLocalFront(2);
        assertFalse(front.holdsBlock());
        Lease a = front.acquireBlocking(1);
        Lease b = front.acquireBlocking(1);
        assertTrue(front.holdsBlock());
        assertEquals(1, count(c));
        CompletableFuture<Lease> third = front.acquireAsync(2);
        assertFalse(third.isDone());
        Lease other = cluster.acquireBlocking(2); // the other half of the cluster: granted, 2 + 2 <= 4
        a.close();
        assertFalse(third.isDone(), "needs 2 locally");
        b.close();
        Lease c3 = third.get(10, TimeUnit.SECONDS);
        assertTrue(front.holdsBlock());
        c3.close();
        await("the block returned", () -> !front.holdsBlock());
        other.close();
        await("empty", () -> count(c) == 0);
        assertThrows(IllegalArgumentException.class, () -> front.acquireAsync(3));
        assertThrows(IllegalArgumentException.class, () -> front.acquireAsync(0));
    }

    @Test
    void cancellingALocalWaiterNeverLeaks() throws Exception {
        CuratorFramework c = clients.start();
        LocalFront front = new ZooKeeperSemaphore(c, path, 2).withLocalFront(2);
        Lease held = front.acquireBlocking(2);
        CompletableFuture<Lease> waiting = front.acquireAsync(1);
        assertTrue(waiting.cancel(false));
        held.close();
        await("the block returned", () -> !front.holdsBlock());
        await("empty", () -> count(c) == 0);
    }

    @Test
    void aLostBlockInvalidatesItsLeasesAndFailsItsWaiters() throws Exception {
        CuratorFramework c = clients.start();
        LocalFront front = new ZooKeeperSemaphore(c, path, 2).withLocalFront(2);
        Lease held = front.acquireBlocking(2);
        CompletableFuture<Lease> waiting = front.acquireAsync(1);
        Clients.expireSession(c, server.getConnectString());
        held.whenLost().toCompletableFuture().get(20, TimeUnit.SECONDS);
        assertFalse(held.isValid());
        ExecutionException e = assertThrows(ExecutionException.class, () -> waiting.get(20, TimeUnit.SECONDS));
        assertInstanceOf(SessionLostException.class, e.getCause());
        held.close();
        await("reconnected", () -> c.getZookeeperClient().isConnected());
        Lease again = front.acquireBlocking(1); // a new block, on the new session
        assertTrue(again.isValid());
        again.close();
        await("empty", () -> count(c) == 0);
    }

    @Test
    void aBusyFrontHandsItsBlockOnToAnotherReplica() throws Exception {
        CuratorFramework c1 = clients.start();
        CuratorFramework c2 = clients.start();
        // No hold limit to speak of: only the watch on the cluster queue can make the front hand on.
        LocalFront busy = new ZooKeeperSemaphore(c1, path, 2).withLocalFront(2, Duration.ofHours(1));
        ZooKeeperSemaphore other = new ZooKeeperSemaphore(c2, path, 2);
        AtomicLong inUse = new AtomicLong();
        AtomicLong peak = new AtomicLong();
        AtomicLong localGrants = new AtomicLong();
        AtomicBoolean stop = new AtomicBoolean();
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < 4; t++) { // overlapping callers: the front is never idle
            Thread th = new Thread(() -> {
                while (!stop.get()) {
                    try (Lease lease = busy.acquireBlocking(1)) {
                        peak.accumulateAndGet(inUse.incrementAndGet(), Math::max);
                        localGrants.incrementAndGet();
                        Thread.sleep(1);
                        inUse.decrementAndGet();
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            });
            th.start();
            threads.add(th);
        }
        await("the front busy", () -> localGrants.get() > 50);
        Optional<Lease> got = other.tryAcquireBlocking(1, Duration.ofSeconds(30)); // the review: timed out after 10 s
        assertTrue(got.isPresent(), "another replica is granted while the front is busy");
        peak.accumulateAndGet(inUse.incrementAndGet(), Math::max);
        assertTrue(busy.handedOn.get() >= 1);
        long grantsWhileOtherHolds = localGrants.get();
        inUse.decrementAndGet();
        got.get().close();
        await("the front serves its callers again", () -> localGrants.get() > grantsWhileOtherHolds + 20);
        stop.set(true);
        for (Thread th : threads) {
            th.join(30_000);
            assertFalse(th.isAlive());
        }
        assertTrue(peak.get() <= 2, "over-admission: " + peak.get());
        await("the block returned", () -> !busy.holdsBlock());
        await("no node left", () -> count(c1) == 0);
    }

    @Test
    void theMaximumHoldHandsTheBlockOnEvenWithoutAWaiter() throws Exception {
        CuratorFramework c = clients.start();
        LocalFront front = new ZooKeeperSemaphore(c, path, 2).withLocalFront(2, Duration.ofMillis(100));
        Lease held = front.acquireBlocking(1);
        await("handed on after the maximum hold", () -> front.handedOn.get() == 1);
        CompletableFuture<Lease> next = front.acquireAsync(1);
        Thread.sleep(100);
        assertFalse(next.isDone(), "a handed-on block admits nobody new (1 of 2 free, still refused)");
        held.close(); // drained: the block goes back, and the next block serves the waiter
        Lease again = next.get(10, TimeUnit.SECONDS);
        again.close();
        await("the block returned", () -> !front.holdsBlock());
        await("empty", () -> count(c) == 0);
        IllegalArgumentException bad = assertThrows(
                IllegalArgumentException.class, () -> front.cluster().withLocalFront(1, Duration.ZERO));
        assertTrue(bad.getMessage().startsWith("withLocalFront(1, PT0S)"), bad.getMessage());
    }

    @Test
    void aTimedOutFrontAcquireWithdrawsItsBlockRequest() throws Exception {
        CuratorFramework c1 = clients.start();
        CuratorFramework c2 = clients.start();
        LocalFront front = new ZooKeeperSemaphore(c1, path, 2).withLocalFront(2);
        Lease all = new ZooKeeperSemaphore(c2, path, 2).acquireBlocking(2);
        assertTrue(front.tryAcquireBlocking(1, Duration.ofMillis(200)).isEmpty());
        await("the block request withdrawn", () -> count(c1) == 1);
        assertFalse(front.holdsBlock());
        all.close();
        Lease lease = front.tryAcquireBlocking(1, Duration.ofSeconds(10)).orElseThrow();
        lease.close();
        await("empty", () -> count(c1) == 0);
    }

    private int count(CuratorFramework c) {
        try {
            return children(c, path).size();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
