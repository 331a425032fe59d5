// SPDX-License-Identifier: Apache-2.0
package dev.handoff.zookeeper;

import static dev.handoff.zookeeper.Clients.await;
import static dev.handoff.zookeeper.Clients.children;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.curator.framework.CuratorFramework;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Two ways in which a lease could be valid while its permits are someone else's, each forced
 * deterministically on a real server: a capacity shrink that lands between a waiter's reads, and a
 * held node deleted by hand.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class LeaseSafetyTest extends ServerPerTest {

    /**
     * Capacity 10; 5, 4 and 1 held; A waits for 5. The 1 is released, and A's evaluation runs; just
     * before it reads the queue, the capacity is shrunk to 5 and the 5 released. The queue A reads
     * then holds 4 and A's 5: with the capacity 5 in force, A must wait for the 4.
     */
    @Test
    void aShrinkBetweenAWaitersReadsIsDecidedWithTheNewCapacity() throws Exception {
        CuratorFramework holderClient = clients.start();
        CuratorFramework waiterClient = clients.start();
        ZooKeeperSemaphore holder = new ZooKeeperSemaphore(holderClient, path, 10);
        ZooKeeperSemaphore waiter = new ZooKeeperSemaphore(waiterClient, path, 10);
        Lease five = holder.acquireBlocking(5);
        Lease four = holder.acquireBlocking(4);
        Lease one = holder.acquireBlocking(1);
        CompletableFuture<Lease> a = waiter.acquireAsync(5);
        await("A waits at the head, watching the three leases", () -> waiter.watchedCount() == 3);
        assertFalse(a.isDone());

        AtomicBoolean armed = new AtomicBoolean(true);
        AtomicLong decisionsAtShrink = new AtomicLong(Long.MAX_VALUE);
        CompletableFuture<Void> shrunk = new CompletableFuture<>();
        waiter.queueReadHook = () -> { // on A's event thread, before A reads its generation
            if (!armed.compareAndSet(true, false)) {
                return;
            }
            try {
                holder.setCapacity(5);
                five.close();
                await("the 5 released", () -> holderClient.checkExists().forPath(five.node()) == null);
                decisionsAtShrink.set(waiter.decisions.get());
                shrunk.complete(null);
            } catch (Throwable t) {
                shrunk.completeExceptionally(t);
            }
        };
        one.close(); // A's watch fires and it evaluates: the hook runs inside that evaluation
        shrunk.get(30, TimeUnit.SECONDS);
        await("A decides on the queue read after the shrink", () -> waiter.decisions.get() > decisionsAtShrink.get());
        assertFalse(a.isDone(), () -> "A was granted 5 while 4 were held at capacity 5: " + a);

        four.close();
        Lease granted = a.get(30, TimeUnit.SECONDS);
        assertTrue(granted.isValid());
        assertEquals(5, waiter.capacity());
        granted.close();
        await("empty", () -> children(holderClient, path).isEmpty());
    }

    @Test
    void aLeaseWhoseNodeIsDeletedIsLostAndItsHolderIsTold() throws Exception {
        CuratorFramework holderClient = clients.start();
        CuratorFramework otherClient = clients.start();
        ZooKeeperSemaphore holder = new ZooKeeperSemaphore(holderClient, path, 1);
        ZooKeeperSemaphore other = new ZooKeeperSemaphore(otherClient, path, 1);
        CompletableFuture<String> told = new CompletableFuture<>();
        holder.addListener(new ZooKeeperListener() {
            @Override
            public void leaseLost(Lease lost, String reason) {
                told.complete(lost.node() + ": " + reason);
            }
        });
        Lease lease = holder.acquireBlocking(1);
        CompletableFuture<Lease> next = other.acquireAsync(1);
        await("queued", () -> children(otherClient, path).size() == 2);

        otherClient.delete().forPath(lease.node()); // an operator, a cleanup script, a bug

        Lease granted = next.get(30, TimeUnit.SECONDS);
        lease.whenLost().toCompletableFuture().get(30, TimeUnit.SECONDS); // a hang detector: it must come
        assertFalse(lease.isValid(), "a lease whose node is gone is not valid");
        assertEquals(Lease.State.LOST, lease.state());
        assertTrue(told.get(30, TimeUnit.SECONDS).startsWith(lease.node() + ": its node"), told::toString);
        assertTrue(granted.isValid());
        lease.close();
        granted.close();
        await("empty", () -> children(otherClient, path).isEmpty());
    }
}
