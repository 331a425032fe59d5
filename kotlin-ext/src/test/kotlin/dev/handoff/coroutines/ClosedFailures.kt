// SPDX-License-Identifier: Apache-2.0
package dev.handoff.coroutines

import dev.handoff.SemaphoreClosedException

/**
 * Runs [call] and adds the message of the [SemaphoreClosedException] it throws, if any, to
 * [failures]: the close tests launch their waiters with it and compare the messages afterwards.
 */
internal suspend fun recordClosed(failures: MutableList<String>, call: suspend () -> Unit) {
    try {
        call()
    } catch (closed: SemaphoreClosedException) {
        failures += closed.message.toString()
    }
}
