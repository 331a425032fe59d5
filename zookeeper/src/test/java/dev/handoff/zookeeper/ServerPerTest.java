// SPDX-License-Identifier: Apache-2.0
package dev.handoff.zookeeper;

import org.apache.curator.test.TestingServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.TestInfo;

/**
 * The fixture of the tests that need a server of their own (they stop, restart or expire
 * sessions on it): a fresh in-process server per test, the clients to it (closed after the test,
 * before the server), and a znode path named after the test method.
 */
abstract class ServerPerTest {

    TestingServer server;
    Clients clients;
    String path;

    @BeforeEach
    void startServer(TestInfo test) throws Exception {
        server = new TestingServer(true);
        ServerInternals.keepTestJvm();
        clients = new Clients(server.getConnectString());
        path = "/handoff-test/" + test.getTestMethod().orElseThrow().getName();
    }

    @AfterEach
    void stopServer() throws Exception {
        clients.close();
        server.close();
    }
}
