// SPDX-License-Identifier: Apache-2.0
package dev.handoff.zookeeper;

import static dev.handoff.zookeeper.Clients.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.test.InstanceSpec;
import org.apache.curator.test.TestingCluster;
import org.apache.zookeeper.KeeperException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A randomized fault test in the manner of Jepsen: three clients, each behind its own freezable
 * proxies to a 3-server ensemble, run acquire / release / timeout / cancel storms while a nemesis
 * freezes client links (briefly, or past the session timeout, so that the server expires the
 * session) and kills and restarts the leader. (Sessions are not ended through a second handle here:
 * that deletes the nodes at once, faster than any holder can learn, which no lease can guard
 * against; in production a session ends by its timeout, and HonestLeaseTest and SessionFailureTest
 * cover the rest.) An independent checker, which parses the znodes itself and trusts nothing of the
 * semaphore but what a caller sees, then asserts:
 * <ol>
 *   <li>at no instant do the permits of leases whose holder considers them valid exceed the
 *       capacity (each lease's interval runs from the first to the last {@code isValid() == true}
 *       its holder saw, so recorded intervals lie within the true ones);</li>
 *   <li>FIFO by sequence within a generation: in every snapshot of the queue that an observer
 *       client took after a grant was seen (each read preceded by a sync, so that its server is not
 *       behind the leader), the weights of the requests up to and including the
 *       granted one fit the capacity (a request granted past an earlier one that did not fit, or
 *       over the capacity, breaks it);</li>
 *   <li>every request ends (granted, timed out, cancelled or failed with a session or connection
 *       error): no worker hangs, and nothing is left in the queue.</li>
 * </ol>
 * The seed is printed; set {@code -Dhandoff.faultSeed=...} to replay a run's fault schedule.
 */
@Timeout(value = 150, unit = TimeUnit.SECONDS)
class RandomFaultTest {

    private static final long CAPACITY = 3;
    private static final int CLIENTS = 3;
    private static final int WORKERS = 3;
    private static final long NEMESIS_MS = 30_000;
    private static final int SESSION_MS = 4_000;
    private static final String PATH = "/handoff-test/faults";

    /** One grant as its holder saw it. */
    record Grant(int client, String node, long weight, long token, long validFrom, long validTo) {
    }

    /** A queue snapshot by the observer: the read was sent at sentAt. */
    record Snapshot(long sentAt, String generation, List<String> children) {
    }

    private final ConcurrentLinkedQueue<Grant> grants = new ConcurrentLinkedQueue<>();
    private final ConcurrentLinkedQueue<Snapshot> snapshots = new ConcurrentLinkedQueue<>();
    private final ConcurrentLinkedQueue<Throwable> unexpected = new ConcurrentLinkedQueue<>();
    private final AtomicLong started = new AtomicLong();
    private final AtomicLong ended = new AtomicLong();
    private final AtomicBoolean stop = new AtomicBoolean();
    /** The nemesis's actions with their nanoTime, for the failure messages. */
    private final ConcurrentLinkedQueue<String> history = new ConcurrentLinkedQueue<>();

    private void log(String event) {
        String line = (System.nanoTime() / 1_000_000) + " ms: " + event;
        history.add(line);
        System.out.println("nemesis: " + line);
    }

    @Test
    void randomFaultsNeverOverAdmitNeverBreakFifoAndEveryRequestEnds() throws Exception {
        long seed = Long.getLong("handoff.faultSeed", System.nanoTime());
        System.out.println("RandomFaultTest seed " + seed + " (-Dhandoff.faultSeed=" + seed + " replays the fault schedule)");
        Random random = new Random(seed);
        try (TestingCluster cluster = new TestingCluster(3)) {
            cluster.start();
            List<InstanceSpec> specs = new ArrayList<>(cluster.getInstances());
            List<List<FreezableProxy>> links = new ArrayList<>();
            try (Clients clients = new Clients(cluster.getConnectString())) {
                List<CuratorFramework> curators = new ArrayList<>();
                List<ZooKeeperSemaphore> semaphores = new ArrayList<>();
                for (int c = 0; c < CLIENTS; c++) {
                    List<FreezableProxy> mine = new ArrayList<>();
                    StringBuilder connect = new StringBuilder();
                    for (InstanceSpec spec : specs) {
                        FreezableProxy p = new FreezableProxy(spec.getPort());
                        mine.add(p);
                        connect.append(connect.length() == 0 ? "" : ",").append(p.connectString());
                    }
                    links.add(mine);
                    CuratorFramework curator = clients.start(connect.toString(), SESSION_MS);
                    curators.add(curator);
                    semaphores.add(new ZooKeeperSemaphore(curator, PATH, CAPACITY));
                }
                int sessionMs = curators.get(0).getZookeeperClient().getLastNegotiatedSessionTimeoutMs();
                System.out.println("RandomFaultTest: negotiated session timeout " + sessionMs + " ms");
                CuratorFramework observerClient = clients.start(cluster.getConnectString(), 20_000);
                Thread observer = thread("observer", () -> observe(observerClient));

                List<Thread> workers = new ArrayList<>();
                for (int c = 0; c < CLIENTS; c++) {
                    for (int w = 0; w < WORKERS; w++) {
                        int client = c;
                        ZooKeeperSemaphore s = semaphores.get(c);
                        workers.add(thread("worker-" + c + "-" + w, () -> work(client, s)));
                    }
                }

                long nemesisEnd = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(NEMESIS_MS);
                int faults = 0;
                while (System.nanoTime() < nemesisEnd) {
                    Thread.sleep(500 + random.nextInt(1500));
                    int kind = random.nextInt(4);
                    int victim = random.nextInt(CLIENTS);
                    faults++;
                    if (kind == 0 || kind == 1) {
                        // kind 0: a short freeze (the client is suspended, its session survives);
                        // kind 1: a freeze past the session timeout: the server expires the session, as
                        // it does in production after a partition or a long pause.
                        long ms = kind == 0 ? 300 + random.nextInt(2_000) : sessionMs + 500 + random.nextInt(2_000);
                        log("freeze client " + victim + " for " + ms + " ms" + (kind == 1 ? " (its session expires)" : ""));
                        links.get(victim).forEach(FreezableProxy::freeze);
                        Thread.sleep(ms);
                        links.get(victim).forEach(FreezableProxy::thaw);
                        log("thaw client " + victim);
                    } else if (kind == 2) {
                        InstanceSpec leader = Clients.leader(specs);
                        if (leader != null) {
                            log("kill the leader " + leader.getPort());
                            cluster.killServer(leader);
                            Thread.sleep(1_000 + random.nextInt(2_000));
                            cluster.restartServer(leader);
                            log("restart " + leader.getPort());
                        }
                    } else {
                        log("quiet");
                    }
                }
                links.forEach(l -> l.forEach(FreezableProxy::thaw));
                long grantsAtCalm = grants.size();
                await("grants resume after the faults", () -> grants.size() > grantsAtCalm + 20, 60_000);
                stop.set(true);
                for (Thread w : workers) {
                    w.join(60_000);
                    assertFalse(w.isAlive(), "a worker hangs: " + w.getName());
                }
                observer.join(10_000);
                System.out.printf("RandomFaultTest: %d faults, %d requests, %d grants, %d snapshots%n",
                        faults, started.get(), grants.size(), snapshots.size());
                assertTrue(unexpected.isEmpty(), () -> "unexpected failures: " + unexpected);
                assertEquals(started.get(), ended.get(), "every request ends");
                checkCapacity();
                checkPrefixes();
                await("nothing left in the queue", () -> Clients.children(observerClient, PATH).isEmpty(), 60_000);
            } finally {
                stop.set(true); // whatever failed, the workers and the observer end (daemon threads)
                for (List<FreezableProxy> l : links) {
                    for (FreezableProxy p : l) {
                        p.close();
                    }
                }
            }
        }
    }

    private void work(int client, ZooKeeperSemaphore s) {
        ThreadLocalRandom random = ThreadLocalRandom.current();
        while (!stop.get()) {
            long n = 1 + random.nextInt(2);
            started.incrementAndGet();
            try {
                Lease lease;
                if (random.nextInt(4) == 0) { // cancel after a short while
                    CompletableFuture<Lease> f = s.acquireAsync(n);
                    Thread.sleep(random.nextInt(30));
                    if (f.cancel(false)) {
                        ended.incrementAndGet();
                        continue;
                    }
                    lease = ZooKeeperSemaphore.awaitLease(f);
                } else {
                    Optional<Lease> got = s.tryAcquireBlocking(n, Duration.ofMillis(random.nextInt(3) == 0 ? 0 : 50 + random.nextInt(2_000)));
                    if (got.isEmpty()) {
                        ended.incrementAndGet();
                        continue;
                    }
                    lease = got.get();
                }
                ended.incrementAndGet();
                hold(client, lease, random);
            } catch (InterruptedException e) {
                ended.incrementAndGet();
                return;
            } catch (RuntimeException e) {
                ended.incrementAndGet();
                if (!(e instanceof SessionLostException) && !isKeeper(e)) {
                    unexpected.add(e); // a session or connection error is expected under faults; nothing else
                }
                sleepQuietly(20); // the client is reconnecting
            }
        }
    }

    /** Curator's failures reach the future as KeeperException (checked), wrapped by awaitLease. */
    private static boolean isKeeper(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof KeeperException) {
                return true;
            }
        }
        return false;
    }

    private void hold(int client, Lease lease, ThreadLocalRandom random) throws InterruptedException {
        try {
            if (!lease.isValid()) {
                return;
            }
            long from = System.nanoTime(); // valid at some point before this: count from the later end
            long to = from;
            long until = from + TimeUnit.MILLISECONDS.toNanos(random.nextInt(20));
            while (System.nanoTime() < until) {
                Thread.sleep(2);
                long t = System.nanoTime();
                if (!lease.isValid()) {
                    break; // the holder stops working on it
                }
                to = t; // valid at some point after t: count up to the earlier end
            }
            grants.add(new Grant(client, lease.node(), lease.permits(), lease.fencingToken(), from, to));
        } finally {
            lease.close();
        }
    }

    private void observe(CuratorFramework c) {
        while (!stop.get()) {
            try {
                for (String generation : c.getChildren().forPath(PATH)) {
                    if (!generation.startsWith(ZooKeeperSemaphore.GENERATION_PREFIX)) {
                        continue;
                    }
                    long sentAt = System.nanoTime();
                    // A server may lag behind the leader, and a lagging server still lists nodes that
                    // were deleted before a grant: sync first, so that the read reflects every write
                    // committed before sentAt (a grant seen before sentAt included).
                    sync(c, PATH + "/" + generation);
                    List<String> children = c.getChildren().forPath(PATH + "/" + generation);
                    snapshots.add(new Snapshot(sentAt, generation, children));
                }
                Thread.sleep(20);
            } catch (InterruptedException e) {
                return;
            } catch (Exception e) {
                sleepQuietly(50); // the ensemble is electing a leader
            }
        }
    }

    /** Waits until this client's server has caught up with the leader as of now (Curator syncs in the background only). */
    private static void sync(CuratorFramework c, String path) throws Exception {
        CompletableFuture<Integer> done = new CompletableFuture<>();
        c.sync().inBackground((client, event) -> done.complete(event.getResultCode())).forPath(path);
        int rc = done.get(10, TimeUnit.SECONDS);
        if (rc != 0) {
            throw KeeperException.create(KeeperException.Code.get(rc), path);
        }
    }

    /** 1. At no instant do the permits of leases seen valid exceed the capacity. */
    private void checkCapacity() {
        List<long[]> events = new ArrayList<>();
        for (Grant g : grants) {
            if (g.validTo() >= g.validFrom()) {
                events.add(new long[] {g.validFrom(), +g.weight()});
                events.add(new long[] {g.validTo(), -g.weight()});
            }
        }
        // At one instant, a start counts before an end: intervals are closed.
        events.sort((a, b) -> a[0] != b[0] ? Long.compare(a[0], b[0]) : Long.compare(b[1], a[1]));
        long inUse = 0;
        long peak = 0;
        for (long[] e : events) {
            inUse += e[1];
            peak = Math.max(peak, inUse);
            if (inUse > CAPACITY) {
                long at = e[0];
                StringBuilder overlapping = new StringBuilder();
                for (Grant g : grants) {
                    if (g.validFrom() <= at && at <= g.validTo()) {
                        overlapping.append("\n  ").append(g).append(" from ").append(g.validFrom() / 1_000_000)
                                .append(" ms to ").append(g.validTo() / 1_000_000).append(" ms");
                    }
                }
                fail("over-admission: " + inUse + " permits of leases seen valid at once at " + at / 1_000_000
                        + " ms, capacity " + CAPACITY + ":" + overlapping + "\nnemesis:\n  " + String.join("\n  ", history));
            }
        }
        System.out.println("RandomFaultTest: peak permits of valid leases " + peak + " of " + CAPACITY);
    }

    /** 2. In each later snapshot of its generation, a granted request's prefix fits the capacity. */
    private void checkPrefixes() {
        Map<String, Grant> byName = new HashMap<>();
        for (Grant g : grants) {
            byName.put(g.node().substring(g.node().lastIndexOf('/') + 1), g);
        }
        int checked = 0;
        for (Snapshot s : snapshots) {
            List<long[]> requests = new ArrayList<>(); // {sequence, weight, index}
            List<String> names = new ArrayList<>();
            for (String child : s.children()) {
                long[] parsed = parseIndependently(child);
                if (parsed != null) {
                    requests.add(new long[] {parsed[1], parsed[0], names.size()});
                    names.add(child);
                }
            }
            requests.sort((a, b) -> Long.compare(a[0], b[0]));
            long prefix = 0;
            for (long[] r : requests) {
                prefix += r[1];
                Grant g = byName.get(names.get((int) r[2]));
                if (g != null && g.validFrom() < s.sentAt() && g.node().contains("/" + s.generation() + "/")) {
                    checked++;
                    if (prefix > CAPACITY) {
                        fail("FIFO or capacity broken in " + s.generation() + ": " + names.get((int) r[2])
                                + " was granted, yet the requests up to it weigh " + prefix + " > " + CAPACITY + " in " + s.children());
                    }
                }
            }
        }
        System.out.println("RandomFaultTest: " + checked + " granted requests checked against later snapshots");
        assertTrue(checked > 0, "the observer saw granted requests");
    }

    /** The checker's own parse of a request name (…req-w&lt;19 digits&gt;-&lt;10 digits&gt;), independent of the semaphore's. */
    private static long[] parseIndependently(String name) {
        int at = name.lastIndexOf("req-w");
        if (at < 0 || name.length() != at + 5 + 19 + 1 + 10 || name.charAt(at + 5 + 19) != '-') {
            return null;
        }
        return new long[] {Long.parseLong(name.substring(at + 5, at + 24)), Long.parseLong(name.substring(at + 25))};
    }

    private static Thread thread(String name, Runnable r) {
        Thread t = new Thread(r, name);
        t.setDaemon(true);
        t.start();
        return t;
    }

    private static void sleepQuietly(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
