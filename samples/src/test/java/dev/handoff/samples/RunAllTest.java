// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** A hang (a permit never returned) fails the test instead of stalling the build. */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class RunAllTest {

    @Test
    void printsEverySample() throws Exception {
        PrintStream out = System.out;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try {
            RunAll.main(new String[0]);
        } finally {
            System.setOut(out);
        }
        String printed = captured.toString(StandardCharsets.UTF_8);
        out.print(printed);
        for (String header : new String[] {"1. Memory budget", "2. Callbacks", "3. Virtual threads",
                "4. Kotlin withPermits", "5. RwLock cache", "7. Cluster budget", "8. Fencing", "14. Fair share"}) {
            assertTrue(printed.contains(header), () -> "missing \"" + header + "\" in:\n" + printed);
        }
    }
}
