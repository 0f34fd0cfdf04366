package io.sumi.budget;

import com.zaxxer.hikari.HikariDataSource;
import io.sumi.budget.jdbc.JdbcSpendStore;
import io.sumi.jdbc.DatabaseType;
import io.sumi.testing.TestDatabase;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.EnumSource;

/** The spend-store contract ({@link SpendStoreContract}) on the JDBC store, on each database. */
@ParameterizedClass
@EnumSource(TestDatabase.class)
class JdbcSpendStoreContractTests extends SpendStoreContract {

    /** One pool per database for the whole class, wide enough for the race's threads. */
    private static final Map<TestDatabase, HikariDataSource> POOLS = new ConcurrentHashMap<>();

    @Parameter
    TestDatabase database;

    @AfterAll
    static void closePools() {
        POOLS.values().forEach(HikariDataSource::close);
        POOLS.clear();
    }

    @Override
    protected SpendStore newStore() {
        HikariDataSource pool = POOLS.computeIfAbsent(
                database, db -> FleetHarness.pool(FleetHarness.migrated(db), "spend-contract-" + db.name(), 8));
        return JdbcSpendStore.builder(pool).queryTimeout(Duration.ofSeconds(5)).build();
    }

    @Override
    protected SpendStore unreachableStore() {
        FleetHarness.SwitchableDataSource down =
                new FleetHarness.SwitchableDataSource(POOLS.values().iterator().next());
        down.down = true;
        return JdbcSpendStore.builder(down)
                .databaseType(DatabaseType.valueOf(database.name()))
                .build();
    }
}
