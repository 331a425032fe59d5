// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import dev.handoff.zookeeper.Lease;
import dev.handoff.zookeeper.ZooKeeperSemaphore;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.test.TestingServer;
import org.apache.zookeeper.ZooKeeper;

/**
 * Sample 8: a fencing token keeps an overtaken holder out of a shared store.
 *
 * <p>No lease on a remote lock service can know at every instant that it still holds: a holder
 * can stop (a long GC pause, a frozen network link) right after checking its lease, for longer
 * than its ZooKeeper session timeout; the server then expires its session and grants the permits
 * to the next replica, and when the first one resumes it carries on with its stale plan. The store
 * that both write to closes that gap: every write carries the lease's
 * {@link Lease#fencingToken()}, which grows with the queue order across every replica, and the
 * store refuses a token lower than the highest it has accepted for the same key.
 *
 * <p>Here replica A takes the one permit of a {@code ZooKeeperSemaphore} (a cluster-wide lock) and
 * writes; then it "pauses": its session is expired from outside, as the server would after a pause
 * longer than the session timeout. Replica B is granted the permit with a larger token and writes.
 * A resumes and writes without looking at its lease: the store refuses it.
 */
public final class FencingSample {

    /**
     * What the run proves.
     *
     * @param tokenA            A's fencing token
     * @param tokenB            B's fencing token, granted after A's session expired
     * @param staleWriteRefused whether the store refused A's write after B's
     * @param finalValue        what the store holds at the end
     * @param aValidAtTheEnd    what A's lease says once A has been told of the expiry
     */
    public record Figures(long tokenA, long tokenB, boolean staleWriteRefused, String finalValue, boolean aValidAtTheEnd) {
    }

    /** The shared store: keeps, for each key, the highest token that wrote it, and refuses lower ones. */
    static final class FencedStore {
        private final Map<String, Long> highest = new HashMap<>();
        private final Map<String, String> values = new HashMap<>();

        /** Writes value under key if token is not lower than the highest that wrote key; says whether it did. */
        synchronized boolean write(String key, String value, long token) {
            Long seen = highest.get(key);
            if (seen != null && token < seen) {
                return false; // an overtaken holder
            }
            highest.put(key, token);
            values.put(key, value);
            return true;
        }

        synchronized String read(String key) {
            return values.get(key);
        }
    }

    private FencingSample() {
    }

    /**
     * Runs the two replicas against a fresh in-process ZooKeeper and returns the figures.
     *
     * @return the figures
     * @throws Exception if the in-process server cannot start
     */
    public static Figures run() throws Exception {
        try (TestingServer zookeeper = new TestingServer(true)) {
            CuratorFramework a = ClusterBudgetSample.connect(zookeeper);
            CuratorFramework b = ClusterBudgetSample.connect(zookeeper);
            try {
                FencedStore store = new FencedStore();
                ZooKeeperSemaphore lockA = new ZooKeeperSemaphore(a, "/locks/report", 1);
                ZooKeeperSemaphore lockB = new ZooKeeperSemaphore(b, "/locks/report", 1);

                Lease leaseA = lockA.acquireBlocking(1);
                store.write("report", "A: draft", leaseA.fencingToken());

                expireSession(a, zookeeper.getConnectString()); // A "pauses" past its session timeout

                try (Lease leaseB = lockB.acquireBlocking(1)) { // granted once A's node is gone
                    store.write("report", "B: final", leaseB.fencingToken());
                    // A resumes and writes on its stale plan, without checking its lease first:
                    boolean accepted = store.write("report", "A: stale overwrite", leaseA.fencingToken());
                    leaseA.whenLost().toCompletableFuture().get(30, TimeUnit.SECONDS); // A is told, later
                    Figures f = new Figures(leaseA.fencingToken(), leaseB.fencingToken(), !accepted, store.read("report"),
                            leaseA.isValid());
                    leaseA.close(); // releasing a lost lease is harmless
                    return f;
                }
            } finally {
                b.close();
                a.close();
            }
        }
    }

    /** Ends a client's session on the server, as a pause longer than the session timeout would. */
    private static void expireSession(CuratorFramework client, String connectString) throws Exception {
        ZooKeeper zk = client.getZookeeperClient().getZooKeeper();
        ZooKeeper twin = new ZooKeeper(connectString, 8_000, event -> { }, zk.getSessionId(), zk.getSessionPasswd());
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!twin.getState().isConnected() && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        twin.close(); // closing a handle of the session ends the session
    }

    /**
     * Runs the sample and prints its figures.
     *
     * @param args ignored
     * @throws Exception if the in-process server cannot start
     */
    public static void main(String[] args) throws Exception {
        System.out.println("8. Fencing: a store refuses a holder whose lease was overtaken");
        Figures f = run();
        System.out.println("   A's token " + f.tokenA() + ", B's token " + f.tokenB() + " (granted after A's session expired)");
        System.out.println("   A's stale write after B's: " + (f.staleWriteRefused() ? "refused by the store" : "ACCEPTED"));
        System.out.println("   the store holds: " + f.finalValue() + "; A's lease says valid: " + f.aValidAtTheEnd());
    }
}
