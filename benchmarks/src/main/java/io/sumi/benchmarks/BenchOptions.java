package io.sumi.benchmarks;

import java.util.LinkedHashMap;
import java.util.Map;

/** The {@code --name=value} arguments of a benchmark's {@code main}, in the order given. */
public final class BenchOptions {

    private BenchOptions() {}

    /**
     * Parses {@code args}; an argument that is not {@code --name=value} prints the usage line for
     * {@code benchmark} and exits with status 2 (a mistyped option must not run a different
     * benchmark than the one asked for).
     */
    public static Map<String, String> parse(String benchmark, String[] args) {
        Map<String, String> options = new LinkedHashMap<>();
        for (String arg : args) {
            int eq = arg.indexOf('=');
            if (!arg.startsWith("--") || eq < 0) {
                System.err.println(
                        "Usage: " + benchmark + " [--name=value ...]; see the class comment (got " + arg + ")");
                System.exit(2);
            }
            options.put(arg.substring(2, eq), arg.substring(eq + 1));
        }
        return options;
    }
}
