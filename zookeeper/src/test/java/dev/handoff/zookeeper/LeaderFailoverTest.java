// SPDX-License-Identifier: Apache-2.0
package dev.handoff.zookeeper;

import static dev.handoff.zookeeper.Clients.await;
import static dev.handoff.zookeeper.Clients.leader;
import static dev.handoff.zookeeper.Clients.mode;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
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
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.data.Stat;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The leader of a 3-server ensemble killed during a storm of acquires and releases from three
 * clients. An independent counter (raised after each grant, lowered before each close) checks
 * that at no instant do the live leases exceed the capacity, and the storm must go on after the
 * failover.
 */
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class LeaderFailoverTest {

    private static final long CAPACITY = 5;
    private static final String PATH = "/handoff-test/storm";

    @Test
    void noOverAdmissionWhileTheLeaderIsKilled() throws Exception {
        try (TestingCluster cluster = new TestingCluster(3)) {
            cluster.start();
            ServerInternals.keepTestJvm();
            try (Clients clients = new Clients(cluster.getConnectString())) {
                List<CuratorFramework> curators = new ArrayList<>();
                List<ZooKeeperSemaphore> semaphores = new ArrayList<>();
                for (int i = 0; i < 3; i++) {
                    curators.add(clients.start());
                    semaphores.add(new ZooKeeperSemaphore(curators.get(i), PATH, CAPACITY));
                }
                CuratorFramework observer = clients.start();
                Storm storm = new Storm();
                try {
                    for (ZooKeeperSemaphore s : semaphores) {
                        for (int t = 0; t < 3; t++) {
                            storm.start(s);
                        }
                    }
                    await("the storm runs", () -> storm.grants.get() > 60);

                    InstanceSpec leader = leader(cluster.getInstances());
                    assertNotNull(leader, "a leader");
                    cluster.killServer(leader);
                    long grantsAtKill = storm.grants.get();
                    List<InstanceSpec> survivors = new ArrayList<>(cluster.getInstances());
                    survivors.remove(leader);
                    // The two survivors elect a leader (seconds on a loaded machine), then the storm
                    // must go on: a stall here is a liveness bug, and the message shows every client's state.
                    awaitOrDescribe(
                            "the survivors elect a leader",
                            () -> leader(survivors) != null,
                            60_000,
                            cluster,
                            curators,
                            semaphores,
                            observer,
                            storm);
                    awaitOrDescribe(
                            "the storm goes on after the failover",
                            () -> storm.grants.get() > grantsAtKill + 120,
                            60_000,
                            cluster,
                            curators,
                            semaphores,
                            observer,
                            storm);

                    storm.stop();
                    System.out.printf(
                            "leader failover: %d grants before the kill, %d after, peak %d of %d, %d failed requests%n",
                            grantsAtKill,
                            storm.grants.get() - grantsAtKill,
                            storm.peak.get(),
                            CAPACITY,
                            storm.failed.get());
                    assertTrue(
                            storm.peak.get() <= CAPACITY,
                            "over-admission: " + storm.peak.get() + " permits held at once, capacity " + CAPACITY);
                    assertEquals(0, storm.inUse.get());
                    assertTrue(storm.unexpected.isEmpty(), () -> "unexpected failures: " + storm.unexpected);
                    awaitOrDescribe(
                            "no node left behind",
                            () -> Clients.children(observer, PATH).isEmpty(),
                            30_000,
                            cluster,
                            curators,
                            semaphores,
                            observer,
                            storm);
                } finally {
                    storm.halt(); // never leave the storm running into the next test, whatever failed
                }
            }
        }
    }

    /** Nine threads acquiring and releasing; an independent count of the permits held. */
    private static final class Storm {
        final AtomicLong inUse = new AtomicLong();
        final AtomicLong peak = new AtomicLong();
        final AtomicLong grants = new AtomicLong();
        final AtomicLong failed = new AtomicLong();
        /** Failures other than a lost session or connection (the first few). */
        final ConcurrentLinkedQueue<Throwable> unexpected = new ConcurrentLinkedQueue<>();

        final AtomicBoolean stop = new AtomicBoolean();
        final List<Thread> threads = new ArrayList<>();

        void start(ZooKeeperSemaphore s) {
            Thread w = new Thread(() -> run(s), "storm-" + threads.size());
            w.setDaemon(true);
            threads.add(w);
            w.start();
        }

        /** Ends the storm: each thread finishes its request (30 s at most), then none may be left. */
        void stop() throws InterruptedException {
            stop.set(true);
            for (Thread w : threads) {
                w.join(30_000);
            }
            halt();
            for (Thread w : threads) {
                assertFalse(
                        w.isAlive(),
                        () -> "a storm thread hangs: " + w.getName() + " " + Arrays.toString(w.getStackTrace()));
            }
        }

        /** Ends the storm without asserting anything, so that an earlier failure is the one reported. */
        void halt() throws InterruptedException {
            stop.set(true);
            for (Thread w : threads) {
                w.interrupt();
                w.join(10_000);
            }
        }

        private void run(ZooKeeperSemaphore s) {
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
                    failed.incrementAndGet();
                    // A request may fail with the connection or the session during the failover; never otherwise.
                    if (!(e instanceof SessionLostException) && !connectionLost(e) && unexpected.size() < 10) {
                        unexpected.add(e);
                    }
                    try {
                        Thread.sleep(20); // the client is reconnecting
                    } catch (InterruptedException stopped) {
                        return;
                    }
                }
            }
        }
    }

    /** Whether e is a lost connection: Curator's KeeperException (checked) reaches the caller wrapped. */
    private static boolean connectionLost(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof KeeperException.ConnectionLossException) {
                return true;
            }
        }
        return false;
    }

    /** await, but a timeout fails with the servers' modes, each client's state and the queue. */
    private static void awaitOrDescribe(
            String what,
            Clients.Condition condition,
            long millis,
            TestingCluster cluster,
            List<CuratorFramework> curators,
            List<ZooKeeperSemaphore> semaphores,
            CuratorFramework observer,
            Storm storm)
            throws InterruptedException {
        try {
            await(what, condition, millis);
        } catch (AssertionError e) {
            StringBuilder b = new StringBuilder(e.getMessage());
            b.append("\nstorm: ")
                    .append(storm.grants.get())
                    .append(" grants, ")
                    .append(storm.failed.get())
                    .append(" failed requests, unexpected ")
                    .append(storm.unexpected);
            for (InstanceSpec spec : cluster.getInstances()) {
                b.append("\nserver ").append(spec.getPort()).append(": ").append(mode(spec));
            }
            for (int i = 0; i < semaphores.size(); i++) {
                b.append("\nclient ")
                        .append(i)
                        .append(" session 0x")
                        .append(Long.toHexString(sessionId(curators.get(i))))
                        .append(": ")
                        .append(semaphores.get(i).describe());
            }
            try {
                for (String generation : observer.getChildren().forPath(PATH)) {
                    String genPath = PATH + "/" + generation;
                    for (String child : observer.getChildren().forPath(genPath)) {
                        Stat stat = observer.checkExists().forPath(genPath + "/" + child);
                        b.append("\nnode ").append(genPath).append('/').append(child);
                        if (stat != null) {
                            b.append(" owner 0x")
                                    .append(Long.toHexString(stat.getEphemeralOwner()))
                                    .append(" data version ")
                                    .append(stat.getVersion());
                        }
                    }
                }
            } catch (Exception readFailed) {
                b.append("\nthe queue could not be read: ").append(readFailed);
            }
            throw new AssertionError(b.toString(), e);
        }
    }

    private static long sessionId(CuratorFramework c) {
        try {
            return c.getZookeeperClient().getZooKeeper().getSessionId();
        } catch (Exception e) {
            return -1;
        }
    }
}
