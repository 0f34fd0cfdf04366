package io.sumi.conformance.report;

import io.sumi.conformance.Scenario;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListMap;
import org.jspecify.annotations.Nullable;

/**
 * What the catalogue found in this JVM, cell by cell; {@code GuaranteesTableTests} (run after every
 * kind) turns it into {@code docs/guarantees.md}.
 */
public final class CatalogueResults {

    /** One cell's state. */
    public enum State {
        PASS,
        FAIL,
        NOT_APPLICABLE,
        NOT_WRITTEN
    }

    /** One cell: its state, and the reason (not applicable) or the failure's message. */
    public record Cell(State state, @Nullable String detail) {}

    private static final Map<String, Map<Scenario, Cell>> CELLS = new ConcurrentSkipListMap<>();

    private CatalogueResults() {}

    public static void record(String kind, Scenario scenario, State state, @Nullable String detail) {
        CELLS.computeIfAbsent(kind, k -> new ConcurrentHashMap<>()).put(scenario, new Cell(state, detail));
    }

    /** kind → scenario → cell, a copy. */
    public static Map<String, Map<Scenario, Cell>> cells() {
        Map<String, Map<Scenario, Cell>> copy = new ConcurrentSkipListMap<>();
        CELLS.forEach((kind, cells) -> copy.put(kind, Map.copyOf(cells)));
        return copy;
    }
}
