// SPDX-License-Identifier: Apache-2.0
package dev.handoff.docs;

import dev.handoff.Semaphore;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpRequest.BodyPublishers;
import java.net.http.HttpResponse;
import java.net.http.HttpResponse.BodyHandlers;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import javax.sql.DataSource;

/** The cookbook's recipes (the event loop and shutdown recipes are in JavaFaces and CapacityControl). */
final class Cookbook {

    private Cookbook() {
    }

    // tag::cookbook-http[]
    static final class Uploader {
        private final HttpClient http = HttpClient.newHttpClient();
        final Semaphore bytesInFlight = Semaphore.builder(256L << 20) // 256 MiB of bodies in flight
                .name("uploads")
                .maxQueuedPermits(1L << 30)                        // refuse beyond 1 GiB waiting
                .build();

        CompletableFuture<HttpResponse<String>> upload(URI target, byte[] body) {
            long cost = Math.min(body.length, bytesInFlight.capacity()); // clamp an oversized body
            HttpRequest request = HttpRequest.newBuilder(target)
                    .POST(BodyPublishers.ofByteArray(body))
                    .build();
            return bytesInFlight.withPermitsAsync(cost,             // released when the response is in
                    () -> http.sendAsync(request, BodyHandlers.ofString()));
        }
    }
    // end::cookbook-http[]

    // tag::cookbook-jdbc[]
    static final class Reports {
        private final DataSource pool;                             // a pool of 10 connections
        final Semaphore connections = Semaphore.builder(10)
                .name("reports-db")
                .maxQueueLength(200)                               // beyond 200 waiting, fail fast
                .build();

        Reports(DataSource pool) {
            this.pool = pool;
        }

        long count(String table) throws SQLException, InterruptedException {
            if (!connections.tryAcquireBlocking(1, Duration.ofSeconds(2))) {
                throw new SQLTransientConnectionException("no connection within 2 s");
            }
            try (Connection c = pool.getConnection();
                 Statement s = c.createStatement();
                 ResultSet rows = s.executeQuery("select count(*) from " + table)) {
                rows.next();
                return rows.getLong(1);
            } finally {
                connections.release(1);
            }
        }
    }
    // end::cookbook-jdbc[]
}
