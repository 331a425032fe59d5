// SPDX-License-Identifier: Apache-2.0
package dev.handoff.zookeeper;

import static dev.handoff.zookeeper.Clients.await;
import static dev.handoff.zookeeper.Clients.children;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.test.TestingServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.Timeout;

/** The semantics on one real in-process ZooKeeper server: FIFO, all-or-nothing, cancellation, bad input. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ZooKeeperSemaphoreTest {

    private static TestingServer server;
    private Clients clients;
    private CuratorFramework a;
    private CuratorFramework b;
    private String path;

    @BeforeAll
    static void startServer() throws Exception {
        server = new TestingServer(true);
        ServerInternals.keepTestJvm();
    }

    @AfterAll
    static void stopServer() throws Exception {
        server.close();
    }

    @BeforeEach
    void connect(TestInfo test) throws InterruptedException {
        clients = new Clients(server.getConnectString());
        a = clients.start();
        b = clients.start();
        path = "/handoff-test/" + test.getTestMethod().orElseThrow().getName();
    }

    @AfterEach
    void disconnect() {
        clients.close();
    }

    @Test
    void grantsInFifoOrderAllOrNothingAcrossClients() throws Exception {
        ZooKeeperSemaphore sa = new ZooKeeperSemaphore(a, path, 4);
        ZooKeeperSemaphore sb = new ZooKeeperSemaphore(b, path, 4);
        Lease three = sa.acquireBlocking(3);
        CompletableFuture<Lease> two = sb.acquireAsync(2);
        await("the 2 is queued", () -> childCount() == 2);
        CompletableFuture<Lease> one = sa.acquireAsync(1);
        await("the 1 is queued", () -> childCount() == 3);
        Thread.sleep(100);
        assertFalse(two.isDone(), "2 of the 1 free: all-or-nothing, nothing granted");
        assertFalse(one.isDone(), "1 would fit, but the 2 is before it: no barging");

        three.close();
        Lease gotTwo = two.get(10, TimeUnit.SECONDS);
        Lease gotOne = one.get(10, TimeUnit.SECONDS);
        assertEquals(2, gotTwo.permits());
        assertEquals(1, gotOne.permits());
        assertTrue(gotTwo.isValid() && gotOne.isValid());
        assertFalse(three.isValid());
        gotTwo.close();
        gotOne.close();
        gotOne.close(); // idempotent
        await("every node deleted", () -> childCount() == 0);
        Lease all = sb.acquireBlocking(4);
        all.close();
    }

    @Test
    void twoClientsAskingForThreeOfFourNeverDeadlock() throws Exception {
        // Curator's InterProcessSemaphoreV2 takes 3 leases one by one: two clients may hold 2 each and wait forever.
        ZooKeeperSemaphore sa = new ZooKeeperSemaphore(a, path, 4);
        ZooKeeperSemaphore sb = new ZooKeeperSemaphore(b, path, 4);
        for (int round = 0; round < 20; round++) {
            CompletableFuture<Lease> fa = sa.acquireAsync(3);
            CompletableFuture<Lease> fb = sb.acquireAsync(3);
            CompletableFuture<Object> first = CompletableFuture.anyOf(fa, fb);
            Lease winner = (Lease) first.get(10, TimeUnit.SECONDS);
            CompletableFuture<Lease> other = fa.isDone() && fa.join() == winner ? fb : fa;
            assertFalse(other.isDone(), "3 + 3 > 4: only one at a time");
            winner.close();
            other.get(10, TimeUnit.SECONDS).close();
        }
    }

    @Test
    void fifoAmongManyWaitersOfOneClient() throws Exception {
        ZooKeeperSemaphore s = new ZooKeeperSemaphore(a, path, 3);
        Lease block = s.acquireBlocking(3);
        List<Integer> order = new ArrayList<>();
        List<CompletableFuture<Lease>> waiters = new ArrayList<>();
        long[] weights = {2, 1, 3, 1, 1, 2};
        for (int i = 0; i < weights.length; i++) {
            int id = i;
            CompletableFuture<Lease> f = s.acquireAsync(weights[i]);
            waiters.add(f.thenApply(l -> {
                synchronized (order) {
                    order.add(id);
                }
                l.close();
                return l;
            }));
            int expected = i + 2;
            await("waiter " + i + " queued", () -> childCount() == expected);
        }
        block.close();
        for (CompletableFuture<Lease> f : waiters) {
            f.get(10, TimeUnit.SECONDS);
        }
        assertEquals(List.of(0, 1, 2, 3, 4, 5), order);
    }

    @Test
    void badInputIsRefusedAtOnceNamingTheCallTheValueAndTheLimit() throws Exception {
        ZooKeeperSemaphore s = new ZooKeeperSemaphore(a, path, 16);
        IllegalArgumentException tooBig = assertThrows(IllegalArgumentException.class, () -> s.acquireAsync(17));
        assertEquals(
                "acquireAsync(17): exceeds the capacity 16 of " + path + ", so it could never be granted",
                tooBig.getMessage());
        IllegalArgumentException zero = assertThrows(IllegalArgumentException.class, () -> s.acquireBlocking(0));
        assertTrue(zero.getMessage().startsWith("acquireBlocking(0): "), zero.getMessage());
        IllegalArgumentException negative =
                assertThrows(IllegalArgumentException.class, () -> s.tryAcquireBlocking(-3, Duration.ofSeconds(1)));
        assertTrue(negative.getMessage().startsWith("tryAcquireBlocking(-3): "), negative.getMessage());
        assertEquals(0, childCount(), "nothing created");

        IllegalArgumentException mismatch =
                assertThrows(IllegalArgumentException.class, () -> new ZooKeeperSemaphore(b, path, 8));
        assertTrue(mismatch.getMessage().contains("16") && mismatch.getMessage().contains("8"), mismatch.getMessage());
        assertEquals("16", new String(a.getData().forPath(path), StandardCharsets.US_ASCII), "capacity unchanged");

        a.create()
                .creatingParentsIfNeeded()
                .forPath(path + "-garbage", "sixteen\u0001".getBytes(StandardCharsets.UTF_8));
        IllegalArgumentException garbage =
                assertThrows(IllegalArgumentException.class, () -> new ZooKeeperSemaphore(b, path + "-garbage", 16));
        assertTrue(
                garbage.getMessage().contains("not a capacity")
                        && garbage.getMessage().contains("sixteen\\x01"),
                garbage.getMessage());

        a.create().forPath(path + "-zero", "0".getBytes(StandardCharsets.US_ASCII));
        assertThrows(IllegalArgumentException.class, () -> new ZooKeeperSemaphore(b, path + "-zero", 16));

        assertThrows(IllegalArgumentException.class, () -> new ZooKeeperSemaphore(b, path, 0));
        assertThrows(IllegalArgumentException.class, () -> new ZooKeeperSemaphore(b, path, -1));
        assertThrows(IllegalArgumentException.class, () -> new ZooKeeperSemaphore(b, "no-slash", 1));
        assertThrows(IllegalArgumentException.class, () -> new ZooKeeperSemaphore(b, path + "/", 16));
        assertThrows(IllegalArgumentException.class, () -> s.withLocalFront(17));
        assertThrows(IllegalArgumentException.class, () -> s.withLocalFront(0));

        // An empty node (made by hand) is claimed.
        a.create().forPath(path + "-empty", new byte[0]);
        assertEquals(5, new ZooKeeperSemaphore(b, path + "-empty", 5).capacity());
        assertEquals("5", new String(a.getData().forPath(path + "-empty"), StandardCharsets.US_ASCII));
    }

    @Test
    void cancelWithdrawsTheNodeAndLetsTheNextIn() throws Exception {
        ZooKeeperSemaphore s = new ZooKeeperSemaphore(a, path, 2);
        Lease held = s.acquireBlocking(1);
        CompletableFuture<Lease> two = s.acquireAsync(2);
        CompletableFuture<Lease> one = s.acquireAsync(1);
        await("both queued", () -> childCount() == 3);
        assertFalse(one.isDone(), "FIFO: the 1 waits behind the 2");
        assertTrue(two.cancel(false));
        Lease gotOne = one.get(10, TimeUnit.SECONDS);
        await("the cancelled node deleted", () -> childCount() == 2);
        gotOne.close();
        held.close();
        await("empty", () -> childCount() == 0);
    }

    @Test
    void timeoutAndInterruptWithdrawTheNode() throws Exception {
        ZooKeeperSemaphore s = new ZooKeeperSemaphore(a, path, 2);
        Lease held = s.acquireBlocking(2);
        Optional<Lease> none = s.tryAcquireBlocking(1, Duration.ofMillis(200));
        assertTrue(none.isEmpty());
        await("timed-out node deleted", () -> childCount() == 1);

        AtomicReference<Throwable> thrown = new AtomicReference<>();
        CountDownLatch started = new CountDownLatch(1);
        Thread waiter = new Thread(() -> {
            started.countDown();
            try {
                s.acquireBlocking(1).close();
            } catch (Throwable t) {
                thrown.set(t);
            }
        });
        waiter.start();
        started.await();
        await("the blocked one queued", () -> childCount() == 2);
        waiter.interrupt();
        waiter.join(10_000);
        assertTrue(thrown.get() instanceof InterruptedException, String.valueOf(thrown.get()));
        await("interrupted node deleted", () -> childCount() == 1);
        held.close();
        Optional<Lease> got = s.tryAcquireBlocking(2, Duration.ofSeconds(10));
        assertTrue(got.isPresent());
        got.get().close();
    }

    @Test
    void cancelRacingTheGrantNeverLeaks() throws Exception {
        ZooKeeperSemaphore s = new ZooKeeperSemaphore(a, path, 1);
        AtomicInteger granted = new AtomicInteger();
        for (int i = 0; i < 40; i++) {
            Lease holder = s.acquireBlocking(1);
            CompletableFuture<Lease> f = s.acquireAsync(1);
            holder.close();
            if (i % 2 == 0) {
                Thread.sleep(i % 7); // land the cancel before, near or after the grant
            }
            if (!f.cancel(false)) {
                granted.incrementAndGet();
                f.join().close();
            }
        }
        await("no node left behind", () -> childCount() == 0);
        Lease all = s.tryAcquireBlocking(1, Duration.ofSeconds(10)).orElseThrow();
        all.close();
    }

    @Test
    void aReleaseWakesOnlyTheRequestsItCanGrant() throws Exception {
        // Capacity 1, ten waiters queued: each release must wake the head (and the grant the next),
        // not all ten. Counts ZooKeeper watch events per grant.
        ZooKeeperSemaphore s = new ZooKeeperSemaphore(a, path, 1);
        Lease first = s.acquireBlocking(1);
        List<CompletableFuture<Lease>> queue = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            queue.add(s.acquireAsync(1));
        }
        await("all queued", () -> childCount() == 11);
        Thread.sleep(200); // let every waiter read and set its watch
        long watchesBefore = s.watchEvents.get();
        long grantsBefore = s.grants.get();
        first.close();
        for (CompletableFuture<Lease> f : queue) {
            f.get(10, TimeUnit.SECONDS).close();
        }
        long grants = s.grants.get() - grantsBefore;
        long watches = s.watchEvents.get() - watchesBefore;
        assertEquals(10, grants);
        assertTrue(
                watches <= 3 * grants,
                "watch events per grant: " + watches + " for " + grants
                        + " grants (a herd would be about 10 per grant)");
    }

    @Test
    void closingTheSemaphoreObjectFailsItsWaitersAndKeepsItsLeases() throws Exception {
        ZooKeeperSemaphore s = new ZooKeeperSemaphore(a, path, 1);
        Lease held = s.acquireBlocking(1);
        CompletableFuture<Lease> waiting = s.acquireAsync(1);
        await("queued", () -> childCount() == 2);
        s.close();
        Throwable failure = assertThrows(Exception.class, () -> waiting.get(10, TimeUnit.SECONDS))
                .getCause();
        assertTrue(failure instanceof dev.handoff.SemaphoreClosedException, String.valueOf(failure));
        await("the waiter's node withdrawn", () -> childCount() == 1);
        assertTrue(held.isValid());
        held.close();
        await("empty", () -> childCount() == 0);
        assertTrue(s.acquireAsync(1).isCompletedExceptionally());
    }

    @Test
    void aZeroTimeoutMakesOneDecisionAndCleansUp() throws Exception {
        ZooKeeperSemaphore s = new ZooKeeperSemaphore(a, path, 2);
        Lease first =
                s.tryAcquireBlocking(1, Duration.ZERO).orElseThrow(() -> new AssertionError("free: granted at once"));
        Lease second = s.tryAcquireBlocking(1, Duration.ofMillis(-5)).orElseThrow();
        for (int i = 0; i < 5; i++) {
            assertTrue(s.tryAcquireBlocking(1, Duration.ZERO).isEmpty(), "full: one decision, no wait");
        }
        await("every refused node withdrawn", () -> childCount() == 2);
        first.close();
        Lease third = s.tryAcquireBlocking(1, Duration.ZERO).orElseThrow();
        third.close();
        second.close();
        await("empty", () -> childCount() == 0);
    }

    @Test
    void arrivalsBehindTheHeadWakeNobody() throws Exception {
        ZooKeeperSemaphore sa = new ZooKeeperSemaphore(a, path, 2);
        ZooKeeperSemaphore sb = new ZooKeeperSemaphore(b, path, 2);
        Lease held = sb.acquireBlocking(2);
        CompletableFuture<Lease> head = sa.acquireAsync(1);
        await("the head queued and decided", () -> childCount() == 2 && sa.reads.get() >= 2);
        Thread.sleep(100); // the head's watches set
        long readsBefore = sa.reads.get();
        List<CompletableFuture<Lease>> arrivals = new ArrayList<>();
        for (int i = 0; i < 50; i++) {
            arrivals.add(sb.acquireAsync(1));
        }
        await("50 arrivals queued", () -> childCount() == 52);
        Thread.sleep(200);
        assertEquals(readsBefore, sa.reads.get(), "the head re-read the queue for arrivals behind it");
        held.close();
        head.get(10, TimeUnit.SECONDS).close();
        for (CompletableFuture<Lease> f : arrivals) {
            f.get(20, TimeUnit.SECONDS).close();
        }
        long grants = sb.grants.get();
        long reads = sb.reads.get();
        assertTrue(reads <= 6 * grants, "reads per grant: " + reads + " for " + grants);
    }

    @Test
    void theQueueIsBoundedWithAClearRejection() throws Exception {
        ZooKeeperSemaphore s = new ZooKeeperSemaphore(a, path, 1);
        s.maxQueueLength = 3;
        Lease held = s.acquireBlocking(1);
        CompletableFuture<Lease> second = s.acquireAsync(1);
        CompletableFuture<Lease> third = s.acquireAsync(1);
        await("queued", () -> childCount() == 3);
        CompletableFuture<Lease> fourth = s.acquireAsync(1);
        Throwable refused = assertThrows(
                        java.util.concurrent.ExecutionException.class, () -> fourth.get(10, TimeUnit.SECONDS))
                .getCause();
        assertTrue(refused instanceof dev.handoff.SemaphoreRejectedException, String.valueOf(refused));
        assertTrue(
                refused.getMessage()
                        .startsWith("acquireAsync(1) on " + path
                                + ": the queue already holds 3 requests, the most it may hold is 3"),
                refused.getMessage());
        await("the refused node withdrawn", () -> childCount() == 3);
        held.close();
        second.get(10, TimeUnit.SECONDS).close();
        third.get(10, TimeUnit.SECONDS).close();
    }

    @Test
    void setCapacityGrowsGrantsShrinksAsDebtAndFailsWhatCanNeverFit() throws Exception {
        ZooKeeperSemaphore sa = new ZooKeeperSemaphore(a, path, 4);
        ZooKeeperSemaphore sb = new ZooKeeperSemaphore(b, path, 4);
        Lease three = sa.acquireBlocking(3);
        CompletableFuture<Lease> two = sb.acquireAsync(2);
        await("queued", () -> childCount() == 2);
        assertFalse(two.isDone());

        sa.setCapacity(6); // growth grants
        Lease gotTwo = two.get(10, TimeUnit.SECONDS);
        await("the other client sees the new capacity", () -> sb.capacity() == 6);
        assertEquals("6", new String(a.getData().forPath(path), StandardCharsets.US_ASCII));

        CompletableFuture<Lease> one = sb.acquireAsync(2); // 3 + 2 + 2 > 6: waits
        CompletableFuture<Lease> four = sb.acquireAsync(4);
        await("queued", () -> childCount() == 4);
        Thread.sleep(100);
        assertFalse(one.isDone());
        sb.setCapacity(3); // 5 held: a debt of 2; the 4 can never fit
        Throwable tooHeavy = assertThrows(
                        java.util.concurrent.ExecutionException.class, () -> four.get(10, TimeUnit.SECONDS))
                .getCause();
        assertTrue(
                tooHeavy instanceof IllegalStateException
                        && tooHeavy.getMessage().contains("exceeds the capacity 3"),
                String.valueOf(tooHeavy));
        await("the other client sees it", () -> sa.capacity() == 3);
        Thread.sleep(200);
        assertFalse(one.isDone(), "the debt is paid first: 5 held on a capacity of 3");
        gotTwo.close(); // 3 held: 3 + 2 > 3 still
        Thread.sleep(200);
        assertFalse(one.isDone());
        three.close();
        one.get(10, TimeUnit.SECONDS).close();
        assertThrows(IllegalArgumentException.class, () -> sa.acquireAsync(4));
        IllegalArgumentException bad = assertThrows(IllegalArgumentException.class, () -> sa.setCapacity(0));
        assertTrue(bad.getMessage().startsWith("setCapacity(0) on " + path), bad.getMessage());
        await("empty", () -> childCount() == 0);
    }

    private int childCount() {
        try {
            return children(a, path).size();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
