// SPDX-License-Identifier: Apache-2.0
package dev.handoff.docs

import dev.handoff.FairShareSemaphore
import dev.handoff.Semaphore
import io.ktor.client.request.get
import io.ktor.client.request.header
import io.ktor.client.request.post
import io.ktor.client.statement.bodyAsText
import io.ktor.http.HttpHeaders
import io.ktor.http.HttpStatusCode
import io.ktor.server.testing.testApplication
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.async
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.delay
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Test

/**
 * The Kotlin example of docs/integrations/ktor.md ([KotlinKtor]) through success, a handler that
 * fails, and a shed call: every path gives its permits back.
 */
class KotlinKtorTest {

    private class Fake : KotlinKtor.Reports {
        var failure: Exception? = null
        @Volatile var started = CompletableDeferred<Unit>()
        var finish = CompletableDeferred<Unit>().also { it.complete(Unit) }

        override suspend fun find(id: String): String {
            failure?.let { throw it }
            return "report $id"
        }

        override suspend fun export(): String {
            started.complete(Unit)
            finish.await()
            return "export"
        }
    }

    private suspend fun KotlinKtor.allBack() {
        val api = api.primitive() as FairShareSemaphore<*>
        val exports = exports.primitive() as Semaphore
        var n = 0
        while ((api.availablePermits() != 64L || exports.availablePermits() != 2L) && n++ < 5_000) delay(2)
        assertEquals(64, api.availablePermits())
        assertEquals(0, api.queueLength())
        assertEquals(2, exports.availablePermits())
    }

    @Test
    fun success(): Unit = testApplication {
        val example = KotlinKtor(Fake())
        application { with(example) { module() } }
        val response = client.get("/reports/7") { header("X-Tenant", "acme") }
        assertEquals("report 7", response.bodyAsText())
        assertEquals("export", client.post("/exports").bodyAsText())
        example.allBack()
    }

    @Test
    fun handlerFails(): Unit = testApplication {
        val reports = Fake().apply { failure = IllegalStateException("store down") }
        val example = KotlinKtor(reports)
        application { with(example) { module() } }
        assertEquals(HttpStatusCode.InternalServerError, client.get("/reports/7").status)
        example.allBack()
    }

    @Test
    fun aThirdExportIsShed(): Unit = testApplication {
        val reports = Fake().apply { finish = CompletableDeferred() }
        val example = KotlinKtor(reports)
        application { with(example) { module() } }
        coroutineScope {
            val first = async { client.post("/exports") }
            reports.started.await()
            reports.started = CompletableDeferred()
            val second = async { client.post("/exports") }
            reports.started.await()
            val third = client.post("/exports")
            assertEquals(HttpStatusCode.ServiceUnavailable, third.status)
            assertEquals("1", third.headers[HttpHeaders.RetryAfter])
            reports.finish.complete(Unit)
            assertEquals("export", first.await().bodyAsText())
            assertEquals("export", second.await().bodyAsText())
        }
        example.allBack()
    }
}
