package io.sumi.autoconfigure.actuate.internal;

import java.util.Map;
import org.springframework.data.relational.core.mapping.NamingStrategy;

/**
 * Gives the read models the configured table names. {@code @Table} takes only constants, and the
 * ledger's and the outbox's names are properties ({@code sumi.ledger.table-name},
 * {@code sumi.outbox.table-name}), so the names come from this strategy instead; columns keep
 * Spring Data's snake_case mapping. The names were validated as SQL identifiers (optionally
 * {@code schema.table}) when the properties were bound, and the mapping context does not quote
 * them, so a qualified name is rendered as written and unquoted names resolve as the Flyway
 * scripts created them (H2 folds them to upper case).
 */
final class SumiTableNames implements NamingStrategy {

    private final Map<Class<?>, String> tables;

    SumiTableNames(Map<Class<?>, String> tables) {
        this.tables = Map.copyOf(tables);
    }

    @Override
    public String getTableName(Class<?> type) {
        String table = tables.get(type);
        return table != null ? table : NamingStrategy.super.getTableName(type);
    }
}
