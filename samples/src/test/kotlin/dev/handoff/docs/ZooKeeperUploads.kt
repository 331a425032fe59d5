// SPDX-License-Identifier: Apache-2.0
package dev.handoff.docs

// tag::zookeeper-kotlin[]
import dev.handoff.zookeeper.ZooKeeperSemaphore
import dev.handoff.zookeeper.withPermits

class ClusterUploads(private val budget: ZooKeeperSemaphore, private val downstream: Downstream) {
    suspend fun upload(body: ByteArray): Response =
        budget.withPermits(mebibytes(body)) { downstream.send(body) } // FIFO across every replica

    private fun mebibytes(body: ByteArray): Long = maxOf(1L, (body.size + (1L shl 20) - 1) shr 20) // round up
}
// end::zookeeper-kotlin[]
