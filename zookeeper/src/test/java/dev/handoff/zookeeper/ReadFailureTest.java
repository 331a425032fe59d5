// SPDX-License-Identifier: Apache-2.0
package dev.handoff.zookeeper;

import static dev.handoff.zookeeper.Clients.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.curator.framework.CuratorFramework;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.Id;
import org.apache.zookeeper.server.auth.DigestAuthenticationProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** A read that keeps failing for a reason other than the connection is reported once and ends the wait with an exception. */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class ReadFailureTest extends ServerPerTest {

    @Test
    void aWaiterWhoseReadsAreRefusedFailsAndTheListenerIsToldOnce() throws Exception {
        CuratorFramework ownerClient = clients.start();
        CuratorFramework waiterClient = clients.start();
        ZooKeeperSemaphore owner = new ZooKeeperSemaphore(ownerClient, path, 1);
        ZooKeeperSemaphore waiter = new ZooKeeperSemaphore(waiterClient, path, 1);
        List<String> failing = new CopyOnWriteArrayList<>();
        AtomicInteger attemptsAtFailure = new AtomicInteger();
        waiter.addListener(new ZooKeeperListener() {
            @Override
            public void readsFailing(String message, int attempts) {
                failing.add(message);
            }
        });
        Lease held = owner.acquireBlocking(1);
        CompletableFuture<Lease> waiting = waiter.acquireAsync(1);
        await("the waiter waits, watching the holder", () -> waiter.watchedCount() == 1);

        // The generation becomes readable by the owner only (an ACL changed by an operator).
        ownerClient
                .getZookeeperClient()
                .getZooKeeper()
                .addAuthInfo("digest", "owner:secret".getBytes(StandardCharsets.UTF_8));
        String generation = held.node().substring(0, held.node().lastIndexOf('/'));
        Id ownerId = new Id("digest", DigestAuthenticationProvider.generateDigest("owner:secret"));
        ownerClient
                .setACL()
                .withACL(List.of(new ACL(ZooDefs.Perms.ALL, ownerId)))
                .forPath(generation);
        held.close(); // the waiter's watch fires; its read of the generation is refused

        ExecutionException e = assertThrows(ExecutionException.class, () -> waiting.get(60, TimeUnit.SECONDS));
        attemptsAtFailure.set(failing.size());
        assertInstanceOf(IllegalStateException.class, e.getCause());
        assertInstanceOf(KeeperException.NoAuthException.class, e.getCause().getCause(), e.getCause()::toString);
        assertTrue(e.getCause().getMessage().contains("NOAUTH"), e.getCause().getMessage());
        assertEquals(
                1, attemptsAtFailure.get(), () -> "told once per change of the failure, not per attempt: " + failing);

        // The waiter's withdrawal was refused too (NOAUTH); its node goes with its session, after the test.
        ownerClient.setACL().withACL(ZooDefs.Ids.OPEN_ACL_UNSAFE).forPath(generation);
    }
}
