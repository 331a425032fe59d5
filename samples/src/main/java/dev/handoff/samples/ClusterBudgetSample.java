// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import dev.handoff.zookeeper.Lease;
import dev.handoff.zookeeper.ZooKeeperSemaphore;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.test.TestingServer;

/**
 * Sample 7: three replicas share one budget through ZooKeeper.
 *
 * <p>A service runs as three replicas; together they may send at most {@link #BUDGET_MIB} MiB at
 * once to a shared downstream. Each replica is a separate Curator client (here three clients in
 * one process, on an in-process ZooKeeper server from curator-test) with its own
 * {@link ZooKeeperSemaphore} on the same path: every upload takes as many cluster-wide permits as it
 * has MiB, in one all-or-nothing request, strictly in arrival order across the replicas.
 *
 * <p>Half-way, replica C "crashes" while it holds {@link #CRASH_HOLD_MIB} MiB: its client goes away
 * without releasing. Its session ends, ZooKeeper deletes its request nodes, and the two others get
 * those permits back by themselves. An independent counter of the MiB in flight, raised after each
 * grant and lowered before each release, shows that the budget is never exceeded.
 */
public final class ClusterBudgetSample {

    /** At most 12 MiB in flight across all replicas. */
    static final long BUDGET_MIB = 12;
    /** What replica C holds when it crashes. */
    static final long CRASH_HOLD_MIB = 8;
    private static final int UPLOADS_PER_WORKER = 12;
    private static final int WORKERS_PER_REPLICA = 3;

    /**
     * What the run proves.
     *
     * @param budget          the budget, in MiB
     * @param peakInFlight    the most MiB in flight at once, across the replicas
     * @param uploads         the uploads of the two surviving replicas
     * @param completed       how many of them completed
     * @param crashedHeld     the MiB replica C held when it crashed
     * @param fullBudgetAfter whether a surviving replica could take the whole budget after the crash
     *                        (so the crashed replica's permits came back)
     */
    public record Figures(long budget, long peakInFlight, int uploads, int completed, long crashedHeld,
            boolean fullBudgetAfter) {
    }

    private ClusterBudgetSample() {
    }

    /**
     * Runs the three replicas against a fresh in-process ZooKeeper and returns the figures.
     *
     * @return the figures
     * @throws Exception if the in-process server cannot start
     */
    public static Figures run() throws Exception {
        try (TestingServer zookeeper = new TestingServer(true)) {
            CuratorFramework a = connect(zookeeper);
            CuratorFramework b = connect(zookeeper);
            CuratorFramework c = connect(zookeeper);
            try {
                String path = "/budgets/downstream-mib";
                ZooKeeperSemaphore replicaA = new ZooKeeperSemaphore(a, path, BUDGET_MIB);
                ZooKeeperSemaphore replicaB = new ZooKeeperSemaphore(b, path, BUDGET_MIB);
                ZooKeeperSemaphore replicaC = new ZooKeeperSemaphore(c, path, BUDGET_MIB);

                AtomicLong inFlight = new AtomicLong();
                AtomicLong peak = new AtomicLong();
                AtomicLong completed = new AtomicLong();

                // Replica C takes 8 MiB, then crashes without releasing.
                Lease crashed = replicaC.acquireBlocking(CRASH_HOLD_MIB);
                peak.accumulateAndGet(inFlight.addAndGet(CRASH_HOLD_MIB), Math::max);

                List<Thread> workers = new ArrayList<>();
                int seed = 0;
                for (ZooKeeperSemaphore replica : List.of(replicaA, replicaB)) {
                    for (int w = 0; w < WORKERS_PER_REPLICA; w++) {
                        Random sizes = new Random(seed++);
                        Thread worker = new Thread(() -> {
                            for (int i = 0; i < UPLOADS_PER_WORKER; i++) {
                                long mib = 1 + sizes.nextInt(6);
                                try (Lease lease = replica.acquireBlocking(mib)) {
                                    peak.accumulateAndGet(inFlight.addAndGet(mib), Math::max);
                                    Thread.sleep(2); // the upload
                                    inFlight.addAndGet(-mib);
                                } catch (InterruptedException e) {
                                    Thread.currentThread().interrupt();
                                    return;
                                }
                                completed.incrementAndGet();
                            }
                        });
                        worker.start();
                        workers.add(worker);
                    }
                }
                Thread.sleep(100); // A and B queue up behind C's 8 MiB
                inFlight.addAndGet(-CRASH_HOLD_MIB); // counted out before the crash, as before a release
                c.close(); // the crash: C's session ends, its node goes, its permits come back
                for (Thread worker : workers) {
                    worker.join(TimeUnit.SECONDS.toMillis(60));
                }
                boolean fullBudgetAfter;
                try (Lease all = replicaA.tryAcquireBlocking(BUDGET_MIB, java.time.Duration.ofSeconds(10)).orElse(null)) {
                    fullBudgetAfter = all != null;
                }
                return new Figures(BUDGET_MIB, peak.get(), 2 * WORKERS_PER_REPLICA * UPLOADS_PER_WORKER,
                        (int) completed.get(), crashed.permits(), fullBudgetAfter);
            } finally {
                b.close();
                a.close();
                c.close();
            }
        }
    }

    /** A started client of the in-process server, connected (also used by sample 8). */
    static CuratorFramework connect(TestingServer zookeeper) throws InterruptedException {
        CuratorFramework client = CuratorFrameworkFactory.newClient(zookeeper.getConnectString(), 8_000, 5_000,
                new ExponentialBackoffRetry(50, 8));
        client.start();
        if (!client.blockUntilConnected(10, TimeUnit.SECONDS)) {
            throw new IllegalStateException("no connection to " + zookeeper.getConnectString());
        }
        return client;
    }

    /**
     * Runs the sample and prints its figures.
     *
     * @param args ignored
     * @throws Exception if the in-process server cannot start
     */
    public static void main(String[] args) throws Exception {
        System.out.println("7. Cluster budget: three replicas share " + BUDGET_MIB + " MiB through ZooKeeper");
        Figures f = run();
        System.out.println("   replica C crashed holding " + f.crashedHeld() + " MiB; its permits came back: "
                + (f.fullBudgetAfter() ? "yes, the whole budget was granted again" : "NO"));
        System.out.println("   uploads of replicas A and B: " + f.completed() + " of " + f.uploads() + " completed");
        System.out.println("   peak MiB in flight across the replicas: " + f.peakInFlight() + " (budget " + f.budget() + ")");
    }
}
