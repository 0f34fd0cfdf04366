package io.sumi.conformance.report;

import static org.assertj.core.api.Assertions.assertThat;

import io.sumi.conformance.Scenario;
import io.sumi.conformance.report.CatalogueResults.Cell;
import io.sumi.conformance.report.CatalogueResults.State;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;

/**
 * Runs after every kind (class order, junit-platform.properties): writes {@code target/guarantees.md}
 * and the failures' messages, and fails when the committed {@code docs/guarantees.md} says
 * otherwise, so the published table cannot drift from the tests. With
 * {@code -Dsumi.conformance.write-docs=true} it writes the committed file instead of failing.
 */
@Order(Integer.MAX_VALUE)
class GuaranteesTableTests {

    @Test
    void publishedTableIsTheCatalogueResult() throws IOException {
        Map<String, Map<Scenario, Cell>> cells = CatalogueResults.cells();
        Path buildDir = Path.of(System.getProperty("sumi.conformance.build-dir", "target"));
        Path docs = Path.of(System.getProperty("sumi.conformance.docs", "../docs/guarantees.md"));
        String table = GuaranteesTable.render(cells);
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
                        + " (-Dtest='*ConformanceTests,GuaranteesTableTests')")
                .containsAll(GuaranteesTable.KINDS.stream()
                        .filter(kind -> !GuaranteesTable.KINDS_WITHOUT_DRIVER.containsKey(kind))
                        .toList());
        if (Boolean.getBoolean("sumi.conformance.write-docs")) {
            Files.writeString(docs, table, StandardCharsets.UTF_8);
            return;
        }
        String committed = Files.exists(docs) ? Files.readString(docs, StandardCharsets.UTF_8) : "";
        assertThat(committed)
                .as("docs/guarantees.md differs from this run's catalogue (target/guarantees.md). Regenerate it"
                        + " with ./mvnw -B -pl conformance-tests -am verify -Dtest='*ConformanceTests,GuaranteesTableTests'"
                        + " -Dsurefire.failIfNoSpecifiedTests=false -Dsumi.conformance.write-docs=true")
                .isEqualTo(table);
    }
}
