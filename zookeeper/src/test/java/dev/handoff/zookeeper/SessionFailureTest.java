// SPDX-License-Identifier: Apache-2.0
package dev.handoff.zookeeper;

import static dev.handoff.zookeeper.Clients.await;
import static dev.handoff.zookeeper.Clients.children;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.state.ConnectionState;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Faults on a real in-process server: a holder's session expires, the server goes away and comes back, a client closes mid-wait. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class SessionFailureTest extends ServerPerTest {

    @Test
    void anExpiredHoldersPermitsComeBackAndItIsTold() throws Exception {
        CuratorFramework holderClient = clients.start();
        CuratorFramework waiterClient = clients.start();
        ZooKeeperSemaphore holderSide = new ZooKeeperSemaphore(holderClient, path, 4);
        ZooKeeperSemaphore waiterSide = new ZooKeeperSemaphore(waiterClient, path, 4);

        Lease held = holderSide.acquireBlocking(3);
        CompletableFuture<Lease> holderAlsoWaits = holderSide.acquireAsync(4);
        CompletableFuture<Void> toldLost = held.whenLost().toCompletableFuture();
        CompletableFuture<Lease> waiting = waiterSide.acquireAsync(2);
        await("two queued", () -> count(waiterClient) == 3);

        Clients.expireSession(holderClient, server.getConnectString()); // the "crash"

        Lease granted = waiting.get(20, TimeUnit.SECONDS); // the server deleted the holder's nodes
        assertTrue(granted.isValid());
        toldLost.get(20, TimeUnit.SECONDS);
        assertFalse(held.isValid(), "the holder is told: its lease is lost");
        ExecutionException e = assertThrows(ExecutionException.class, () -> holderAlsoWaits.get(20, TimeUnit.SECONDS));
        assertInstanceOf(SessionLostException.class, e.getCause());
        held.close(); // closing a lost lease is harmless

        // The holder's client is usable again on its new session.
        await("reconnected", () -> holderClient.getZookeeperClient().isConnected());
        granted.close();
        Lease again = holderSide.acquireBlocking(4);
        again.close();
        await("empty", () -> count(waiterClient) == 0);
    }

    @Test
    void suspendedLeasesAreInDoubtAndReconnectedNeitherDoubleGrantsNorLosesANode() throws Exception {
        CuratorFramework c1 = clients.start(20_000);
        CuratorFramework c2 = clients.start(20_000);
        List<ConnectionState> states = new CopyOnWriteArrayList<>();
        c1.getConnectionStateListenable().addListener((c, s) -> states.add(s));
        ZooKeeperSemaphore s1 = new ZooKeeperSemaphore(c1, path, 4);
        ZooKeeperSemaphore s2 = new ZooKeeperSemaphore(c2, path, 4);
        Lease held = s1.acquireBlocking(3);
        CompletableFuture<Lease> waiting = s2.acquireAsync(2);
        await("queued", () -> count(c2) == 2);
        List<String> before = children(c2, path);

        server.stop();
        await("suspended", () -> states.contains(ConnectionState.SUSPENDED));
        await("the lease is in doubt while suspended", () -> held.state() == Lease.State.SUSPENDED);
        assertFalse(held.isValid(), "suspended: not certainly held");
        assertTrue(held.whenSuspended().toCompletableFuture().isDone());
        assertFalse(held.whenLost().toCompletableFuture().isDone(), "suspended is not lost");
        CompletableFuture<Lease> duringOutage = s1.acquireAsync(1); // its create is retried by Curator
        Thread.sleep(300);
        server.restart();
        ServerInternals.keepTestJvm();
        await("reconnected", () -> states.contains(ConnectionState.RECONNECTED));
        await("the outage's request created", () -> count(c2) == 3);

        Thread.sleep(300);
        assertFalse(waiting.isDone(), "no double grant: 3 + 2 > 4 still");
        assertFalse(duringOutage.isDone(), "FIFO: the 1 is behind the 2");
        await("valid again once its node is confirmed", held::isValid);
        List<String> after = children(c2, path);
        assertTrue(after.containsAll(before), "no node lost: " + before + " vs " + after);

        held.close();
        Lease two = waiting.get(20, TimeUnit.SECONDS);
        Lease one = duringOutage.get(20, TimeUnit.SECONDS);
        assertEquals(3, two.permits() + one.permits());
        two.close();
        one.close();
        await("empty", () -> count(c2) == 0);
    }

    @Test
    void aClientClosedMidWaitFailsItsWaitLosesItsLeasesAndFreesItsPlace() throws Exception {
        CuratorFramework holder = clients.start();
        CuratorFramework leaving = clients.start();
        CuratorFramework behind = clients.start();
        ZooKeeperSemaphore sh = new ZooKeeperSemaphore(holder, path, 3);
        ZooKeeperSemaphore sl = new ZooKeeperSemaphore(leaving, path, 3);
        ZooKeeperSemaphore sb = new ZooKeeperSemaphore(behind, path, 3);
        Lease held = sh.acquireBlocking(1);
        Lease leavingLease = sl.acquireBlocking(1);
        CompletableFuture<Lease> leavingWait = sl.acquireAsync(2);
        await("queued", () -> count(holder) == 3);
        CompletableFuture<Lease> behindWait = sb.acquireAsync(1);
        await("queued behind", () -> count(holder) == 4);
        assertFalse(behindWait.isDone(), "FIFO: behind the 2");

        leaving.close();

        ExecutionException e = assertThrows(ExecutionException.class, () -> leavingWait.get(20, TimeUnit.SECONDS));
        assertInstanceOf(SessionLostException.class, e.getCause());
        leavingLease.whenLost().toCompletableFuture().get(20, TimeUnit.SECONDS);
        assertFalse(leavingLease.isValid(), "closing the client ends the session: its lease is lost");
        Lease got = behindWait.get(20, TimeUnit.SECONDS); // the closed session's nodes are gone
        got.close();
        held.close();
        await("empty", () -> count(holder) == 0);
    }

    @Test
    void aReconnectionCostsOneSharedReadNotOnePerWaiter() throws Exception {
        CuratorFramework c1 = clients.start(20_000);
        CuratorFramework c2 = clients.start(20_000);
        List<ConnectionState> states = new CopyOnWriteArrayList<>();
        c1.getConnectionStateListenable().addListener((c, s) -> states.add(s));
        ZooKeeperSemaphore s1 = new ZooKeeperSemaphore(c1, path, 1);
        ZooKeeperSemaphore s2 = new ZooKeeperSemaphore(c2, path, 1);
        Lease held = s2.acquireBlocking(1);
        List<CompletableFuture<Lease>> waiters = new java.util.ArrayList<>();
        for (int i = 0; i < 20; i++) {
            waiters.add(s1.acquireAsync(1));
        }
        await("queued", () -> count(c2) == 21);
        Thread.sleep(200);
        long readsBefore = s1.reads.get();
        server.stop();
        await("suspended", () -> states.contains(ConnectionState.SUSPENDED));
        server.restart();
        ServerInternals.keepTestJvm();
        await("reconnected", () -> states.contains(ConnectionState.RECONNECTED));
        Thread.sleep(500);
        long reads = s1.reads.get() - readsBefore;
        assertTrue(reads <= 8, "reads after one reconnection: " + reads + " (one per waiter would be 20 or more)");
        held.close();
        for (CompletableFuture<Lease> w : waiters) {
            w.get(20, TimeUnit.SECONDS).close();
        }
        await("empty", () -> count(c2) == 0);
    }

    private int count(CuratorFramework c) {
        try {
            return children(c, path).size();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
