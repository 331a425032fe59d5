// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** A hang (a permit never returned) fails the test instead of stalling the build. */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class RunAllTest {

    @Test
    void printsEverySampleOnceInTheOrderOfTheirNumbers() throws Exception {
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
        List<Integer> numbers = new ArrayList<>();
        Matcher title = Pattern.compile("(?m)^(\\d+)\\. ").matcher(printed);
        while (title.find()) {
            numbers.add(Integer.parseInt(title.group(1)));
        }
        List<Integer> expected = new ArrayList<>();
        for (int n = 1; n <= 23; n++) {
            expected.add(n);
        }
        assertEquals(expected, numbers, () -> "sample titles out of order, missing or repeated in:\n" + printed);
    }
}
