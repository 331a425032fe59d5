// SPDX-License-Identifier: Apache-2.0
package dev.handoff.docs

import dev.handoff.FairShareSemaphore
import dev.handoff.coroutines.withPermits

/** The Kotlin example of docs/guide/fair-share.md, over a stand-in database. */
class KotlinFairShare(private val database: Database) {

    /** What a query returns. */
    data class Rows(val text: String)

    /** The database behind the pool. */
    fun interface Database {
        fun run(sql: String): Rows
    }

    // tag::fair-share-kotlin[]
    val connections = FairShareSemaphore.builder<String>(32)
        .share { tenant -> if (tenant == "acme") 4L else 1L }
        .maxPermitsPerKey(16)
        .build()

    suspend fun query(tenant: String, sql: String): Rows =
        connections.withPermits(tenant, 1) { database.run(sql) }
    // end::fair-share-kotlin[]
}
