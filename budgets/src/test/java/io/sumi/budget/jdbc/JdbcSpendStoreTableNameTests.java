package io.sumi.budget.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import io.sumi.budget.SpendStore;
import java.time.Duration;
import java.util.UUID;
import org.h2.jdbcx.JdbcDataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The spend store's tables are configurable, as the ledger's and the outbox's are: the names are
 * validated as SQL identifiers, and every statement runs on the tables named.
 */
class JdbcSpendStoreTableNameTests {

    private static final long HOUR = Duration.ofHours(1).toMillis();

    private JdbcDataSource dataSource;
    private JdbcTemplate jdbc;

    @BeforeEach
    void database() {
        dataSource = new JdbcDataSource();
        dataSource.setURL("jdbc:h2:mem:spend_" + UUID.randomUUID() + ";DB_CLOSE_DELAY=-1;MODE=PostgreSQL");
        jdbc = new JdbcTemplate(dataSource);
        jdbc.execute("CREATE SCHEMA billing");
        jdbc.execute("CREATE TABLE billing.fleet_limits (budget_name VARCHAR(200) NOT NULL PRIMARY KEY,"
                + " spend_limit DOUBLE PRECISION NOT NULL, configured_limit DOUBLE PRECISION NOT NULL,"
                + " updated_at TIMESTAMP WITH TIME ZONE NOT NULL)");
        jdbc.execute("CREATE TABLE billing.fleet_spend (budget_name VARCHAR(200) NOT NULL,"
                + " window_start BIGINT NOT NULL, spent DOUBLE PRECISION NOT NULL,"
                + " PRIMARY KEY (budget_name, window_start))");
    }

    @Test
    void everyStatementRunsOnTheTablesNamed() {
        JdbcSpendStore store = JdbcSpendStore.builder(dataSource)
                .spendTableName("billing.fleet_spend")
                .limitTableName("billing.fleet_limits")
                .build();

        assertThat(store.registerLimit("stripe", 3)).isEqualTo(3);
        SpendStore.Grant first = store.tryReserve("stripe", HOUR, 2);
        assertThat(first.reserved()).isTrue();
        assertThat(store.tryReserve("stripe", HOUR, 2).reserved()).isFalse();
        store.release("stripe", first.window().start(), 1);
        store.charge("stripe", first.window().start(), 0.5);
        store.setLimit("stripe", 10);

        assertThat(store.read("stripe", first.window().start())).isEqualTo(new SpendStore.WindowState(1.5, 10));
        assertThat(jdbc.queryForObject("SELECT spent FROM billing.fleet_spend", Double.class))
                .isEqualTo(1.5);
        assertThat(jdbc.queryForObject("SELECT spend_limit FROM billing.fleet_limits", Double.class))
                .isEqualTo(10);
        store.forgetOldWindows("stripe", HOUR, 1);
        assertThat(store.readCurrent("stripe", HOUR).state().limit()).isEqualTo(10);
    }

    @Test
    void aTableNameThatIsNoSqlIdentifierIsRefused() {
        JdbcSpendStore.Builder builder = JdbcSpendStore.builder(dataSource);

        assertThatIllegalArgumentException()
                .isThrownBy(() -> builder.spendTableName("spend; DROP TABLE x"))
                .withMessageContaining("Invalid budget spend table name")
                .withMessageContaining("sumi_budget_spend");
        assertThatIllegalArgumentException()
                .isThrownBy(() -> builder.limitTableName("1limits"))
                .withMessageContaining("Invalid budget limit table name");
        assertThat(JdbcSpendStore.DEFAULT_SPEND_TABLE_NAME).isEqualTo("sumi_budget_spend");
        assertThat(JdbcSpendStore.DEFAULT_LIMIT_TABLE_NAME).isEqualTo("sumi_budget_limit");
    }
}
