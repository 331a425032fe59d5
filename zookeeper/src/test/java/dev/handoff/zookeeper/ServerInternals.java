// SPDX-License-Identifier: Apache-2.0
package dev.handoff.zookeeper;

import java.lang.reflect.Method;
import org.apache.curator.test.TestingServer;
import org.apache.zookeeper.server.DataNode;
import org.apache.zookeeper.server.ServerCnxnFactory;
import org.apache.zookeeper.server.ZooKeeperServer;

/**
 * The in-process server's own DataTree, reached through curator-test's package-private accessors:
 * the tests move a parent's cversion (the counter behind sequential names) to where it is about to
 * run out, as a path would after about a billion requests.
 */
final class ServerInternals {

    private ServerInternals() {
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
