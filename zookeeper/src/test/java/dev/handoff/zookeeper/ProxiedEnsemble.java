// SPDX-License-Identifier: Apache-2.0
package dev.handoff.zookeeper;

import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.curator.test.InstanceSpec;
import org.apache.curator.test.TestingCluster;

/**
 * An in-process ensemble whose servers reach each other only through {@link FreezableProxy}s, one
 * per ordered pair and port (quorum and election): each server is given its own view of the
 * ensemble, in which every other server's addresses are the proxies before it. Freezing the
 * proxies between two servers partitions them the way a network does (no byte passes, no
 * connection is closed), so a follower cut from the leader keeps serving its clients from its
 * own copy until it notices, {@code syncLimit} ticks later.
 */
final class ProxiedEnsemble implements AutoCloseable {

    final TestingCluster cluster;
    final List<InstanceSpec> specs = new ArrayList<>();
    /** quorum[i][j], election[i][j]: the proxies server i uses to reach server j. */
    private final FreezableProxy[][] quorum;

    private final FreezableProxy[][] election;

    ProxiedEnsemble(int servers, int tickMs, int syncLimit) throws IOException {
        // An explicit config version: a leader gives an unversioned config the version of its first
        // zxid, and followers adopt a leader's config of a higher version, which would replace
        // their view (the proxies) with the leader's (the real ports).
        Map<String, Object> properties = Map.of(
                "version",
                "100000000",
                "syncLimit",
                Integer.toString(syncLimit),
                "minSessionTimeout",
                Integer.toString(2 * tickMs),
                "maxSessionTimeout",
                Integer.toString(60 * tickMs));
        for (int i = 0; i < servers; i++) {
            specs.add(new InstanceSpec(null, -1, -1, -1, true, i + 1, tickMs, -1, properties));
        }
        quorum = new FreezableProxy[servers][servers];
        election = new FreezableProxy[servers][servers];
        Map<InstanceSpec, java.util.Collection<InstanceSpec>> views = new LinkedHashMap<>();
        for (int i = 0; i < servers; i++) {
            List<InstanceSpec> view = new ArrayList<>();
            for (int j = 0; j < servers; j++) {
                InstanceSpec s = specs.get(j);
                if (i == j) {
                    view.add(s);
                    continue;
                }
                quorum[i][j] = new FreezableProxy(s.getQuorumPort());
                election[i][j] = new FreezableProxy(s.getElectionPort());
                view.add(new InstanceSpec(
                        s.getDataDirectory(),
                        s.getPort(),
                        port(election[i][j]),
                        port(quorum[i][j]),
                        false,
                        s.getServerId(),
                        tickMs,
                        -1,
                        properties));
            }
            views.put(specs.get(i), view);
        }
        cluster = new TestingCluster(views);
    }

    private static int port(FreezableProxy p) {
        String c = p.connectString();
        return Integer.parseInt(c.substring(c.lastIndexOf(':') + 1));
    }

    /** Starts the servers; a server's request to end the JVM is recorded instead (ServerInternals.keepTestJvm). */
    void start() throws Exception {
        cluster.start();
        ServerInternals.keepTestJvm();
    }

    /** Starts a server that was killed again; see start(). */
    void restart(InstanceSpec server) throws Exception {
        cluster.restartServer(server);
        ServerInternals.keepTestJvm();
    }

    /** The index of the leader now, or -1. */
    int leader() {
        InstanceSpec l = Clients.leader(specs);
        return l == null ? -1 : specs.indexOf(l);
    }

    /**
     * The index of the leader once the ensemble has settled: one leader and every other server
     * following it, seen in three reads in a row, 200 ms apart. On a slow machine a first leader can
     * lose its followers' sync and another be elected, so a leader seen once is not yet the one a
     * test can place its clients around.
     */
    int settledLeader(long millis) throws InterruptedException {
        long deadline = System.nanoTime() + millis * 1_000_000L;
        int seen = -1;
        int inARow = 0;
        while (true) {
            List<String> modes = modeList(); // one read of every server: leader and followers agree
            int l = -1;
            boolean followed = true;
            for (int i = 0; i < modes.size(); i++) {
                if (l < 0 && modes.get(i).contains("leader")) {
                    l = i;
                } else if (!modes.get(i).contains("follower")) {
                    followed = false;
                }
            }
            followed &= l >= 0;
            inARow = followed && l == seen ? inARow + 1 : followed ? 1 : 0;
            seen = l;
            if (inARow == 3) {
                return seen;
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError(
                        "the ensemble did not settle on one leader within " + millis + " ms; last read: " + modes);
            }
            Thread.sleep(200);
        }
    }

    /** Each server's mode, for messages. */
    String modes() {
        return modeList().toString();
    }

    private List<String> modeList() {
        List<String> modes = new ArrayList<>();
        for (InstanceSpec spec : specs) {
            modes.add(Clients.mode(spec));
        }
        return modes;
    }

    String connectString(int... servers) {
        StringBuilder b = new StringBuilder();
        for (int i : servers) {
            b.append(b.length() == 0 ? "" : ",")
                    .append("127.0.0.1:")
                    .append(specs.get(i).getPort());
        }
        return b.toString();
    }

    /** Cuts the links between servers i and j, both ways. */
    void cut(int i, int j) {
        quorum[i][j].freeze();
        quorum[j][i].freeze();
        election[i][j].freeze();
        election[j][i].freeze();
    }

    /** Cuts server i from every other server. */
    void isolate(int i) {
        for (int j = 0; j < specs.size(); j++) {
            if (j != i) {
                cut(i, j);
            }
        }
    }

    /** Lets every byte through again. */
    void heal() {
        for (FreezableProxy[] row : quorum) {
            for (FreezableProxy p : row) {
                if (p != null) {
                    p.thaw();
                }
            }
        }
        for (FreezableProxy[] row : election) {
            for (FreezableProxy p : row) {
                if (p != null) {
                    p.thaw();
                }
            }
        }
    }

    @Override
    public void close() throws IOException {
        heal();
        try {
            cluster.close();
        } finally {
            for (FreezableProxy[][] grid : List.of(quorum, election)) {
                for (FreezableProxy[] row : grid) {
                    for (FreezableProxy p : row) {
                        if (p != null) {
                            p.close();
                        }
                    }
                }
            }
        }
    }
}
