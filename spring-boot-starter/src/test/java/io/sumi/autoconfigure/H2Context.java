package io.sumi.autoconfigure;

import java.util.UUID;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.flyway.autoconfigure.FlywayAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * The starting point of the starter's context tests that need a database: an
 * {@link ApplicationContextRunner} on an in-memory H2 database (PostgreSQL mode) of its own for
 * every context, so no context sees another's rows, with Sumi's migrations applied by Flyway.
 */
final class H2Context {

    private H2Context() {}

    /** A DataSource and Flyway, no transaction manager. */
    static ApplicationContextRunner runner(String databaseName) {
        return onH2(new ApplicationContextRunner(), databaseName);
    }

    /** {@code runner} with the DataSource and Flyway of {@link #runner}. */
    static ApplicationContextRunner onH2(ApplicationContextRunner runner, String databaseName) {
        return runner.withPropertyValues(
                        "spring.datasource.url=jdbc:h2:mem:" + databaseName + "_" + UUID.randomUUID()
                                + ";DB_CLOSE_DELAY=-1;MODE=PostgreSQL",
                        "spring.datasource.username=sa",
                        "spring.flyway.locations=classpath:db/sumi/{vendor}")
                .withConfiguration(
                        AutoConfigurations.of(DataSourceAutoConfiguration.class, FlywayAutoConfiguration.class));
    }

    /** {@link #runner} with Boot's DataSource transaction manager. */
    static ApplicationContextRunner withTransactionManager(String databaseName) {
        return runner(databaseName)
                .withConfiguration(AutoConfigurations.of(DataSourceTransactionManagerAutoConfiguration.class));
    }
}
