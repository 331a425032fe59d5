// SPDX-License-Identifier: Apache-2.0
package dev.handoff.zookeeper;

import java.lang.reflect.Method;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.curator.test.TestingCluster;
import org.apache.curator.test.TestingServer;
import org.apache.curator.test.TestingZooKeeperServer;
import org.apache.zookeeper.server.DataNode;
import org.apache.zookeeper.server.ServerCnxnFactory;
import org.apache.zookeeper.server.ZooKeeperServer;
import org.apache.zookeeper.util.ServiceUtils;

/**
 * The in-process server's own DataTree, reached through curator-test's package-private accessors:
 * the tests move a parent's cversion (the counter behind sequential names) to where it is about to
 * run out, as a path would after about a billion requests.
 */
final class ServerInternals {

    private ServerInternals() {}

    /** The exit codes that servers asked for in this JVM since keepTestJvm() was first called. */
    static final List<Integer> EXIT_REQUESTS = new CopyOnWriteArrayList<>();

    /**
     * Keeps the servers from ending the test JVM. An in-process server (ZooKeeper's embedded
     * server, which curator-test runs) asks ZooKeeper's ServiceUtils to end the JVM when its
     * thread fails, for example when a restarted server cannot bind its port, and it sets the
     * procedure that does so on every start: the whole test run would end with that code and no
     * word (surefire reports a fork that "terminated without saying goodbye"). So call this after
     * every start and restart of a server: the request is printed, with where it came from, and
     * recorded in EXIT_REQUESTS instead.
     */
    static void keepTestJvm() {
        ServiceUtils.setSystemExitProcedure(code -> {
            EXIT_REQUESTS.add(code);
            if (code != 0) { // 0: a server's thread ended as it should
                new IllegalStateException("a ZooKeeper server asked to end the JVM with code " + code)
                        .printStackTrace(System.out);
            }
        });
    }

    static ZooKeeperServer zooKeeperServer(TestingServer server) throws Exception {
        Object testing = call(server, "getTestingZooKeeperServer");
        Object main = call(testing, "getMain");
        try {
            ServerCnxnFactory factory = (ServerCnxnFactory) call(main, "getServerCnxnFactory");
            return factory.getZooKeeperServer();
        } catch (NoSuchMethodException notEmbedded) {
            return (ZooKeeperServer) call(main, "getZkServer");
        }
    }

    /** Sets the cversion of the node at path: its next sequential child is named after this value. */
    static void setCversion(TestingServer server, String path, int cversion) throws Exception {
        DataNode node = zooKeeperServer(server).getZKDatabase().getDataTree().getNode(path);
        if (node == null) {
            throw new IllegalStateException("no node " + path);
        }
        synchronized (node) {
            node.stat.setCversion(cversion);
        }
    }

    /**
     * Sets the cversion of the node at path on every running server of an ensemble (the same
     * value, so that they stay alike: the leader names the next sequential child after its own
     * copy, and every server then applies that name's cversion). Servers that are down are skipped.
     *
     * @return on how many servers it was set
     */
    static int setCversion(TestingCluster cluster, String path, int cversion) throws Exception {
        int set = 0;
        java.lang.reflect.Field peerField =
                org.apache.zookeeper.server.quorum.QuorumPeerMain.class.getDeclaredField("quorumPeer");
        peerField.setAccessible(true);
        Method zkDb = org.apache.zookeeper.server.quorum.QuorumPeer.class.getDeclaredMethod("getZkDb");
        zkDb.setAccessible(true);
        for (TestingZooKeeperServer s : cluster.getServers()) {
            Object main = call(s, "getMain");
            main = field(main, "zooKeeperEmbedded"); // Curator's adapter around ZooKeeper's embedded server
            main = field(main, "maincluster");
            if (!(main instanceof org.apache.zookeeper.server.quorum.QuorumPeerMain)) {
                continue;
            }
            Object peer = peerField.get(main);
            if (peer == null) {
                continue;
            }
            org.apache.zookeeper.server.ZKDatabase db = (org.apache.zookeeper.server.ZKDatabase) zkDb.invoke(peer);
            DataNode node = db == null ? null : db.getDataTree().getNode(path);
            if (node != null) {
                synchronized (node) {
                    node.stat.setCversion(cversion);
                }
                set++;
            }
        }
        return set;
    }

    /** The value of the named field of target (declared in its class or a superclass), or target itself if it has none. */
    private static Object field(Object target, String name) throws IllegalAccessException {
        if (target == null) {
            return null;
        }
        for (Class<?> c = target.getClass(); c != null; c = c.getSuperclass()) {
            try {
                java.lang.reflect.Field f = c.getDeclaredField(name);
                f.setAccessible(true);
                return f.get(target);
            } catch (NoSuchFieldException next) {
                // look in the superclass
            }
        }
        return target;
    }

    private static Object call(Object target, String method) throws Exception {
        for (Class<?> c = target.getClass(); c != null; c = c.getSuperclass()) {
            try {
                Method m = c.getDeclaredMethod(method);
                m.setAccessible(true);
                return m.invoke(target);
            } catch (NoSuchMethodException next) {
                // look in the superclass
            }
        }
        throw new NoSuchMethodException(target.getClass() + "." + method);
    }
}
