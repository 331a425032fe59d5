// SPDX-License-Identifier: Apache-2.0
package dev.handoff.docs;

import dev.handoff.docs.Fakes.Client;
import dev.handoff.docs.Fakes.Response;
import dev.handoff.micrometer.ZooKeeperSemaphoreMetrics;
import dev.handoff.zookeeper.Lease;
import dev.handoff.zookeeper.ZooKeeperSemaphore;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.concurrent.CompletableFuture;
import org.apache.curator.framework.CuratorFramework;

/** The ZooKeeper integration page. */
final class ZooKeeperBudget {

    private final Client downstream;
    final ZooKeeperSemaphore budget;

    ZooKeeperBudget(CuratorFramework curator, Client downstream) {
        this.downstream = downstream;
        // tag::zookeeper-open[]
        // In every replica: the same path and capacity (the first writes it; a different one is refused).
        budget = new ZooKeeperSemaphore(curator, "/budgets/downstream-mib", 64);
        // end::zookeeper-open[]
    }

    // tag::zookeeper-metrics[]
    void monitor(MeterRegistry registry) {
        ZooKeeperSemaphoreMetrics.monitor(registry, budget); // gauges, grant waits, lost leases, connection changes
    }
    // end::zookeeper-metrics[]

    // tag::zookeeper-blocking[]
    void upload(byte[] body) throws InterruptedException {
        try (Lease lease = budget.acquireBlocking(mebibytes(body))) { // FIFO across every replica
            downstream.send(body);
        }                                                             // released here, however send ends
    }

    static long mebibytes(byte[] body) {
        return Math.max(1, (body.length + (1L << 20) - 1) >> 20);     // round up: never under-count
    }
    // end::zookeeper-blocking[]

    // tag::zookeeper-async[]
    CompletableFuture<Response> uploadAsync(byte[] body) {
        CompletableFuture<Lease> lease = budget.acquireAsync(mebibytes(body));
        CompletableFuture<Response> sent = lease.thenCompose(granted -> downstream.sendAsync(body));
        sent.whenComplete((response, failure) -> { // sent, failed, or cancelled by the caller:
            lease.cancel(false);                   // still waiting? withdraw the request
            lease.thenAccept(Lease::close);        // granted (now or in a race)? give it back
        });
        return sent;
    }
    // end::zookeeper-async[]
}
