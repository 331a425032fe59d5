// SPDX-License-Identifier: Apache-2.0
package dev.handoff.docs;

import dev.handoff.FairShareSemaphore;
import dev.handoff.Permits;
import java.util.concurrent.CompletableFuture;

/** The Java examples of docs/guide/fair-share.md, over a stand-in database. */
final class FairShare {

    /** What a query returns. */
    record Result(String rows) {
    }

    /** What the examples call: the database behind the pool. */
    interface Database {
        Result run(String sql);

        CompletableFuture<Result> runAsync(String sql);
    }

    private final Database database;

    FairShare(Database database) {
        this.database = database;
    }

    // tag::fair-share-java[]
    FairShareSemaphore<String> connections = FairShareSemaphore.<String>builder(32)
            .share(tenant -> tenant.equals("acme") ? 4 : 1)
            .maxPermitsPerKey(16)
            .build();

    Result query(String tenant, String sql) throws InterruptedException {
        try (Permits connection = connections.acquireBlocking(tenant, 1)) { // released to its tenant
            return database.run(sql);
        }
    }
    // end::fair-share-java[]

    // tag::fair-share-async[]
    CompletableFuture<Result> queryAsync(String tenant, String sql) {
        // released to the tenant when the query's stage completes; cancelling the result
        // before the grant withdraws the request
        return connections.withPermitsAsync(tenant, 1, () -> database.runAsync(sql));
    }
    // end::fair-share-async[]
}
