// SPDX-License-Identifier: Apache-2.0
package dev.handoff.zookeeper;

import static dev.handoff.zookeeper.Clients.await;
import static dev.handoff.zookeeper.Clients.children;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.test.InstanceSpec;
import org.apache.curator.test.TestingCluster;
import org.apache.zookeeper.client.FourLetterWordMain;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The leader of a 3-server ensemble killed during a storm of acquires and releases from three
 * clients. An independent counter (raised after each grant, lowered before each close) checks
 * that at no instant do the live leases exceed the capacity, and the storm must go on after the
 * failover.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class LeaderFailoverTest {

    private static final long CAPACITY = 5;

    @Test
    void noOverAdmissionWhileTheLeaderIsKilled() throws Exception {
        try (TestingCluster cluster = new TestingCluster(3)) {
            cluster.start();
            try (Clients clients = new Clients(cluster.getConnectString())) {
                String path = "/handoff-test/storm";
                List<ZooKeeperSemaphore> semaphores = new ArrayList<>();
                for (int i = 0; i < 3; i++) {
                    semaphores.add(new ZooKeeperSemaphore(clients.start(), path, CAPACITY));
                }
                AtomicLong inUse = new AtomicLong();
                AtomicLong peak = new AtomicLong();
                AtomicLong grants = new AtomicLong();
                AtomicBoolean stop = new AtomicBoolean();
                ConcurrentLinkedQueue<Throwable> failures = new ConcurrentLinkedQueue<>();
                List<Thread> workers = new ArrayList<>();
                for (ZooKeeperSemaphore s : semaphores) {
                    for (int t = 0; t < 3; t++) {
                        Thread w = new Thread(() -> storm(s, inUse, peak, grants, stop, failures), "storm");
                        w.start();
                        workers.add(w);
                    }
                }
                await("the storm runs", () -> grants.get() > 60);

                InstanceSpec leader = leader(cluster);
                assertNotNull(leader, "a leader");
                cluster.killServer(leader);
                long grantsAtKill = grants.get();
                await("the storm goes on after the failover", () -> grants.get() > grantsAtKill + 120, 40_000);

                stop.set(true);
                System.out.printf("leader failover: %d grants before the kill, %d after, peak %d of %d, %d failed requests%n",
                        grantsAtKill, grants.get() - grantsAtKill, peak.get(), CAPACITY, failures.size());
                for (Thread w : workers) {
                    w.join(30_000);
                }
                assertTrue(peak.get() <= CAPACITY, "over-admission: " + peak.get() + " permits held at once, capacity " + CAPACITY);
                assertEquals(0, inUse.get());
                for (Throwable f : failures) {
                    // A request may fail with the connection during the failover; never with anything else.
                    assertTrue(f instanceof org.apache.zookeeper.KeeperException.ConnectionLossException
                            || f instanceof SessionLostException, () -> "unexpected failure: " + f);
                }
                CuratorFramework observer = clients.start();
                await("no node left behind", () -> {
                    try {
                        return children(observer, path).isEmpty();
                    } catch (Exception e) {
                        return false;
                    }
                });
            }
        }
    }

    private static void storm(ZooKeeperSemaphore s, AtomicLong inUse, AtomicLong peak, AtomicLong grants,
            AtomicBoolean stop, ConcurrentLinkedQueue<Throwable> failures) {
        ThreadLocalRandom random = ThreadLocalRandom.current();
        while (!stop.get()) {
            long n = 1 + random.nextInt(3);
            try {
                Optional<Lease> got = s.tryAcquireBlocking(n, Duration.ofSeconds(5));
                if (got.isEmpty()) {
                    continue;
                }
                Lease lease = got.get();
                long now = inUse.addAndGet(n);
                peak.accumulateAndGet(now, Math::max);
                grants.incrementAndGet();
                Thread.sleep(1 + random.nextInt(3)); // hold a while, so that leases overlap
                inUse.addAndGet(-n);
                lease.close();
            } catch (InterruptedException e) {
                return;
            } catch (RuntimeException e) {
                failures.add(e);
            }
        }
    }

    private static InstanceSpec leader(TestingCluster cluster) throws Exception {
        for (InstanceSpec spec : cluster.getInstances()) {
            String srvr = FourLetterWordMain.send4LetterWord("localhost", spec.getPort(), "srvr");
            if (srvr.contains("Mode: leader")) {
                return spec;
            }
        }
        return null;
    }
}
