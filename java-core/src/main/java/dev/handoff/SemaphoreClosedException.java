// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

/**
 * Thrown, or used to fail a future or a coroutine, when an acquisition cannot be granted because
 * the semaphore was {@linkplain Semaphore#close() closed}: either it was closed while the
 * acquisition waited, or the acquisition started after the close. Nothing is held by the caller
 * when this is thrown.
 */
public class SemaphoreClosedException extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception with a message that names the call that failed.
     *
     * @param message the detail message, for example {@code "acquireBlocking(3): the semaphore is closed"}
     */
    public SemaphoreClosedException(String message) {
        super(message);
    }
}
