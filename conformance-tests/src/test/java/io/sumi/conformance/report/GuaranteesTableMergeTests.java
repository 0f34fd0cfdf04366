package io.sumi.conformance.report;

import static org.assertj.core.api.Assertions.assertThat;

import io.sumi.conformance.Scenario;
import io.sumi.conformance.report.CatalogueResults.Cell;
import io.sumi.conformance.report.CatalogueResults.State;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Two modules share one table: each writes its own columns and keeps the other's as committed. */
class GuaranteesTableMergeTests {

    private static Map<String, Map<Scenario, Cell>> every(String kind, State state, String detail) {
        Map<Scenario, Cell> row = new HashMap<>();
        for (Scenario scenario : Scenario.values()) {
            row.put(scenario, new Cell(state, detail));
        }
        return Map.of(kind, row);
    }

    @Test
    void aModuleWritesItsOwnColumnsAndKeepsTheOthersAsCommitted() {
        Map<String, Map<Scenario, Cell>> all = new HashMap<>();
        for (String kind : GuaranteesTable.KINDS) {
            all.putAll(every(kind, State.NOT_APPLICABLE, "committed | with a pipe"));
        }
        String committed = GuaranteesTable.render(all);

        String streamRun =
                GuaranteesTable.render(every("stream-kafka", State.PASS, null), Set.of("stream-kafka"), committed);

        Map<String, Map<String, String>> cells = GuaranteesTable.committedCells(streamRun);
        String title = Scenario.CONCURRENT_DUPLICATES.title();
        assertThat(cells.get(title)).containsEntry("stream-kafka", "**pass**");
        assertThat(cells.get(title)).containsEntry("jms", "n/a: committed \\| with a pipe");
        assertThat(cells.get(title)).containsEntry("stream-rabbit", "n/a: committed \\| with a pipe");
        assertThat(streamRun).isNotEqualTo(committed);
        // The same run against the table it wrote agrees: the check passes only when every owned cell does.
        assertThat(GuaranteesTable.render(every("stream-kafka", State.PASS, null), Set.of("stream-kafka"), streamRun))
                .isEqualTo(streamRun);
    }

    @Test
    void aCellTheCommittedTableLacksIsNotRunUntilItsModuleWritesIt() {
        String table = GuaranteesTable.render(every("jms", State.PASS, null), Set.of("jms"), "");

        assertThat(GuaranteesTable.committedCells(table).get(Scenario.MANUAL_ACK.title()))
                .containsEntry("jms", "**pass**")
                .containsEntry("stream-rabbit", "not run");
    }
}
