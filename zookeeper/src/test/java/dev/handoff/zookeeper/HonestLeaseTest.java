// SPDX-License-Identifier: Apache-2.0
package dev.handoff.zookeeper;

import static dev.handoff.zookeeper.Clients.await;
import static dev.handoff.zookeeper.Clients.children;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.curator.framework.CuratorFramework;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** What a lease says about itself when its holder is cut off, paused, or its semaphore object closed. */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class HonestLeaseTest extends ServerPerTest {

    @Test
    void aFrozenHoldersLeaseIsNotValidOnceItsPermitsAreGrantedElsewhere() throws Exception {
        try (FreezableProxy link = new FreezableProxy(server.getPort())) {
            CuratorFramework holderClient = clients.start(link.connectString(), 4_000);
            CuratorFramework waiterClient = clients.start();
            ZooKeeperSemaphore holderSide = new ZooKeeperSemaphore(holderClient, path, 2);
            ZooKeeperSemaphore waiterSide = new ZooKeeperSemaphore(waiterClient, path, 2);
            Lease held = holderSide.acquireBlocking(2);
            assertTrue(held.isValid());
            CompletableFuture<Lease> waiting = waiterSide.acquireAsync(1);
            await("queued", () -> children(waiterClient, path).size() == 2);

            link.freeze(); // the holder hears nothing and is not heard: its session expires on the server

            Lease granted = waiting.get(60, TimeUnit.SECONDS);
            assertFalse(held.isValid(), "the frozen holder must not believe it still holds: " + held);
            assertTrue(granted.isValid());
            assertTrue(granted.fencingToken() > held.fencingToken(), "the later holder fences off the earlier one");
            assertTrue(held.whenSuspended().toCompletableFuture().isDone() || held.state() == Lease.State.LOST);

            link.thaw();
            held.whenLost().toCompletableFuture().get(60, TimeUnit.SECONDS);
            assertEquals(Lease.State.LOST, held.state());
            held.close();
            granted.close();
            await("empty", () -> children(waiterClient, path).isEmpty());
        }
    }

    @Test
    void pastTheLocalDeadlineALeaseIsLostForGoodEvenWithoutAnyEvent() throws Exception {
        CuratorFramework c = clients.start();
        ZooKeeperSemaphore s = new ZooKeeperSemaphore(c, path, 2);
        AtomicLong now = new AtomicLong(System.nanoTime());
        s.nanoClock = now::get; // a GC pause, as the clock sees it
        Lease lease = s.acquireBlocking(1);
        assertTrue(lease.isValid());
        long timeout = TimeUnit.MILLISECONDS.toNanos(c.getZookeeperClient().getLastNegotiatedSessionTimeoutMs());
        // With the clock stopped, every confirmation by the leader was sent at the same instant, so
        // the deadline is that instant + 9/10 of the timeout - (3/10 + 1/3) of it: + 4/15 of it.
        now.addAndGet(timeout / 5);
        assertTrue(lease.isValid(), "within the deadline");
        now.addAndGet(timeout / 10);
        assertFalse(lease.isValid(), "past the deadline");
        assertEquals(Lease.State.LOST, lease.state());
        assertTrue(lease.whenLost().toCompletableFuture().isDone());
        Lease next = s.acquireBlocking(1); // a fresh read: contact again
        assertTrue(next.isValid());
        assertEquals(Lease.State.LOST, lease.state(), "lost for good");
        assertTrue(lease.release(), "releasing a lost lease deletes its node");
        next.close();
        await("empty", () -> children(c, path).isEmpty());
    }

    @Test
    void theLeasesOfAClosedSemaphoreObjectAreStillWatched() throws Exception {
        CuratorFramework c = clients.start();
        ZooKeeperSemaphore s = new ZooKeeperSemaphore(c, path, 2);
        Lease lease = s.acquireBlocking(1);
        s.close();
        assertTrue(lease.isValid());
        Clients.expireSession(c, server.getConnectString());
        lease.whenLost().toCompletableFuture().get(30, TimeUnit.SECONDS);
        assertFalse(lease.isValid(), "an expired session's lease says so after close() too");
        assertTrue(lease.release());
        assertFalse(lease.release(), "only the first release gives back");
        assertEquals(Lease.State.RELEASED, lease.state());
    }

    @Test
    void fencingTokensIncreaseInGrantOrderAcrossClientsAndFronts() throws Exception {
        CuratorFramework a = clients.start();
        CuratorFramework b = clients.start();
        ZooKeeperSemaphore sa = new ZooKeeperSemaphore(a, path, 1);
        ZooKeeperSemaphore sb = new ZooKeeperSemaphore(b, path, 1);
        long last = 0;
        for (int i = 0; i < 6; i++) {
            Lease lease = (i % 2 == 0 ? sa : sb).acquireBlocking(1);
            assertTrue(lease.fencingToken() > last, "token " + lease.fencingToken() + " after " + last);
            last = lease.fencingToken();
            lease.close();
        }
        LocalFront front = sa.withLocalFront(1);
        Lease local = front.acquireBlocking(1);
        assertTrue(local.fencingToken() > last);
        last = local.fencingToken();
        local.close();
        await("the block returned", () -> !front.holdsBlock());
        Lease after = sb.acquireBlocking(1);
        assertTrue(after.fencingToken() > last);
        after.close();
    }
}
