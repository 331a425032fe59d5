// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import java.util.concurrent.RejectedExecutionException;

/**
 * Thrown (or put in the returned future) when an acquisition would have to wait but the
 * semaphore's wait queue is full: its total waiting weight would exceed
 * {@link Semaphore.Builder#maxQueuedPermits(long)} or its length
 * {@link Semaphore.Builder#maxQueueLength(int)}. Nothing was queued and nothing is held: shed the
 * request (answer "busy", retry later). An acquisition that can be granted at once is never
 * rejected.
 */
public class SemaphoreRejectedException extends RejectedExecutionException {

    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     *
     * @param message names the call, the weight and the bound that refused it
     */
    public SemaphoreRejectedException(String message) {
        super(message);
    }
}
