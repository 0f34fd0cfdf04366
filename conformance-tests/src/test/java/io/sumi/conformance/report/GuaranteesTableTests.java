package io.sumi.conformance.report;

import static org.assertj.core.api.Assertions.assertThat;

import io.sumi.conformance.Scenario;
import io.sumi.conformance.report.CatalogueResults.Cell;
import io.sumi.conformance.report.CatalogueResults.State;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;

/**
 * Runs after every kind (class order, junit-platform.properties): writes {@code target/guarantees.md}
 * and the failures' messages, and fails when the committed {@code docs/guarantees.md} says
 * otherwise in one of this module's columns ({@code sumi.conformance.kinds}; the other columns are
 * the other module's, kept as committed), so the published table cannot drift from the tests. With
 * {@code -Dsumi.conformance.write-docs=true} it writes this module's columns into the committed file
 * instead of failing. {@code conformance-stream-tests} runs it as a subclass.
 */
@Order(Integer.MAX_VALUE)
public class GuaranteesTableTests {

    /** The kinds whose columns this module's run decides. */
    static Set<String> ownedKinds() {
        String kinds = System.getProperty("sumi.conformance.kinds");
        if (kinds == null || kinds.isBlank()) {
            throw new IllegalStateException(
                    "set sumi.conformance.kinds (the surefire configuration of the module does)");
        }
        Set<String> owned = new LinkedHashSet<>(List.of(kinds.split(",")));
        if (!GuaranteesTable.KINDS.containsAll(owned)) {
            throw new IllegalStateException("sumi.conformance.kinds names a column the table does not have: " + owned);
        }
        return owned;
    }

    @Test
    public void publishedTableIsTheCatalogueResult() throws IOException {
        Map<String, Map<Scenario, Cell>> cells = CatalogueResults.cells();
        Path buildDir = Path.of(System.getProperty("sumi.conformance.build-dir", "target"));
        Path docs = Path.of(System.getProperty("sumi.conformance.docs", "../docs/guarantees.md"));
        Set<String> owned = ownedKinds();
        String committed = Files.exists(docs) ? Files.readString(docs, StandardCharsets.UTF_8) : "";
        String table = GuaranteesTable.render(cells, owned, committed);
        Files.createDirectories(buildDir);
        Files.writeString(buildDir.resolve("guarantees.md"), table, StandardCharsets.UTF_8);
        StringBuilder failures = new StringBuilder();
        Map<String, String> sorted = new TreeMap<>();
        cells.forEach((kind, row) -> row.forEach((scenario, cell) -> {
            if (cell.state() == State.FAIL) {
                sorted.put(kind + " × " + scenario.name(), String.valueOf(cell.detail()));
            }
        }));
        sorted.forEach((cell, message) ->
                failures.append(cell).append(": ").append(message).append("\n\n"));
        Files.writeString(buildDir.resolve("conformance-failures.txt"), failures, StandardCharsets.UTF_8);

        assertThat(cells.keySet())
                .as("kinds that reported; the table is written from a run of the whole module"
                        + " (-Dtest='*ConformanceTests,*GuaranteesTableTests')")
                .containsAll(owned);
        if (Boolean.getBoolean("sumi.conformance.write-docs")) {
            Files.writeString(docs, table, StandardCharsets.UTF_8);
            return;
        }
        assertThat(committed)
                .as("docs/guarantees.md differs from this run's catalogue in the columns " + owned
                        + " (target/guarantees.md). Regenerate it with " + GuaranteesTable.REGENERATE)
                .isEqualTo(table);
    }
}
