// SPDX-License-Identifier: Apache-2.0
package dev.handoff.docs

import kotlinx.coroutines.delay

/** What the Kotlin snippets call: the scenario's work, after a suspension. */
typealias Response = Fakes.Response

class Downstream(private val work: Fakes.Work) {
    suspend fun send(body: ByteArray): Response {
        delay(1)
        work.run()
        return Response(200 + body.size % 1)
    }
}

class Http(private val work: Fakes.Work) {
    suspend fun get(url: String): String {
        delay(1)
        work.run()
        return "body of $url"
    }
}

class Store(private val work: Fakes.Work) {
    suspend fun write(rows: Long): Long {
        delay(1)
        work.run()
        return rows
    }
}
