// SPDX-License-Identifier: Apache-2.0
package dev.handoff.zookeeper;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.test.InstanceSpec;
import org.apache.curator.test.TestingServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The constructor refuses a session timeout with which a lease's validity bound cannot hold. The
 * server here ticks every 50 ms, so it grants session timeouts from 100 ms to 1 s: 190 ms is
 * refused, 1 s accepted (a lease then stays valid across a loaded build's pauses).
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class SessionTimeoutCheckTest {

    private static final String PATH = "/handoff-test/session-timeout";

    @Test
    void aSessionTimeoutBelowTheMinimumIsRefusedWithTheCallTheValueAndTheLimit() throws Exception {
        InstanceSpec fastTicks = new InstanceSpec(null, -1, -1, -1, true, -1, 50, -1);
        try (TestingServer server = new TestingServer(fastTicks, true);
                Clients clients = new Clients(server.getConnectString())) {
            ServerInternals.keepTestJvm();
            CuratorFramework tooShort = clients.start(190);
            int granted = tooShort.getZookeeperClient().getLastNegotiatedSessionTimeoutMs();
            assertEquals(190, granted, "the server grants what was asked, between 2 and 20 ticks");
            IllegalArgumentException e =
                    assertThrows(IllegalArgumentException.class, () -> new ZooKeeperSemaphore(tooShort, PATH, 4));
            assertTrue(
                    e.getMessage()
                            .startsWith("ZooKeeperSemaphore(" + PATH
                                    + ", 4): the session timeout the server granted, 190 ms," + " is below 200 ms"),
                    e.getMessage());

            CuratorFramework enough =
                    clients.start(ZooKeeperSemaphore.WARN_SESSION_TIMEOUT_MS); // the server's most: 20 ticks
            assertEquals(1_000, enough.getZookeeperClient().getLastNegotiatedSessionTimeoutMs());
            ZooKeeperSemaphore accepted = new ZooKeeperSemaphore(enough, PATH, 4);
            accepted.acquireBlocking(1).close();
            accepted.close();
        }
    }
}
