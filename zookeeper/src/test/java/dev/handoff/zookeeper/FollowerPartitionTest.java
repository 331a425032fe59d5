// SPDX-License-Identifier: Apache-2.0
package dev.handoff.zookeeper;

import static dev.handoff.zookeeper.Clients.await;
import static dev.handoff.zookeeper.Clients.children;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A holder connected only to a follower, and that follower cut from the rest of the ensemble. The
 * leader expires the holder's session and grants its permit to a waiter, while the follower, which
 * notices the cut only {@code syncLimit} ticks later (20 s here), keeps answering the holder's reads
 * and pings. When the waiter is granted, the holder's lease must no longer say valid: its validity
 * comes from operations the leader ordered, not from what the follower answers.
 */
@Timeout(value = 150, unit = TimeUnit.SECONDS)
class FollowerPartitionTest {

    private static final String PATH = "/handoff-test/follower-partition";

    @Test
    void aFollowerCutFromTheLeaderCannotKeepALeaseValid() throws Exception {
        try (ProxiedEnsemble ensemble = new ProxiedEnsemble(3, 1_000, 20)) {
            ensemble.start();
            int leader = ensemble.settledLeader(60_000);
            int follower = (leader + 1) % 3;
            int other = (leader + 2) % 3;
            try (Clients clients = new Clients(ensemble.cluster.getConnectString())) {
                CuratorFramework holderClient = clients.start(ensemble.connectString(follower), 4_000);
                CuratorFramework waiterClient = clients.start(ensemble.connectString(leader, other), 4_000);
                ZooKeeperSemaphore holderSide = new ZooKeeperSemaphore(holderClient, PATH, 1);
                ZooKeeperSemaphore waiterSide = new ZooKeeperSemaphore(waiterClient, PATH, 1);
                Lease held = holderSide.acquireBlocking(1);
                assertTrue(held.isValid());
                CompletableFuture<Lease> waiting = waiterSide.acquireAsync(1);
                await("queued", () -> children(waiterClient, PATH).size() == 2);

                // the premise: the holder's only server is a follower (a re-election would break it)
                assertEquals(leader, ensemble.leader(), () -> "the leader moved: " + ensemble.modes());
                ensemble.isolate(follower);

                Lease granted = waiting.get(60, TimeUnit.SECONDS); // the leader expired the holder's session
                boolean heldStillValid = held.isValid();
                assertFalse(
                        heldStillValid, () -> "two leases valid at once at capacity 1: " + held + " and " + granted);
                assertTrue(granted.isValid());
                granted.close();
                ensemble.heal();
                held.close();
            }
        }
    }
}
