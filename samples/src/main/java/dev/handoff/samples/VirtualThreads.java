// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * Scaffolding of the virtual-thread sample: the samples are compiled for Java 17, so they reach
 * {@code Executors.newVirtualThreadPerTaskExecutor()} of JDK 21 through a method handle. With JDK 21+
 * bytecode, simply write {@code try (var executor = Executors.newVirtualThreadPerTaskExecutor()) { ... }}.
 */
final class VirtualThreads {

    private VirtualThreads() {}

    /** {@code Executors.newVirtualThreadPerTaskExecutor()} on JDK 21+, else null. */
    static ExecutorService newPerTaskExecutor() {
        int javaVersion = Runtime.version().feature();
        if (javaVersion < 21) {
            return null; // a preview on 19 and 20
        }
        try {
            MethodHandle factory = MethodHandles.publicLookup()
                    .findStatic(
                            Executors.class,
                            "newVirtualThreadPerTaskExecutor",
                            MethodType.methodType(ExecutorService.class));
            return (ExecutorService) factory.invokeExact();
        } catch (Throwable e) {
            throw new IllegalStateException("JDK " + javaVersion + " has no virtual threads", e);
        }
    }
}
