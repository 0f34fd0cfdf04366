package io.sumi.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;

import org.junit.jupiter.api.Test;
import org.springframework.jdbc.datasource.DriverManagerDataSource;

class DatabaseTypeTests {

    @Test
    void detectsTheDatabaseFromItsProductName() {
        assertThat(DatabaseType.fromProductName("PostgreSQL", "16.4")).isEqualTo(DatabaseType.POSTGRESQL);
        assertThat(DatabaseType.fromProductName("MariaDB", "10.11.8-MariaDB")).isEqualTo(DatabaseType.MARIADB);
        assertThat(DatabaseType.fromProductName("MySQL", "5.5.5-10.11.8-MariaDB"))
                .as("older MariaDB drivers")
                .isEqualTo(DatabaseType.MARIADB);
        assertThat(DatabaseType.fromProductName("H2", "2.4.240 (2025-09-22)")).isEqualTo(DatabaseType.H2);
    }

    @Test
    void anUnsupportedDatabaseIsRefusedNamingTheSupportedOnes() {
        assertThatIllegalStateException()
                .isThrownBy(() -> DatabaseType.fromProductName("MySQL", "8.0.36"))
                .withMessageContaining("MySQL 8.0.36")
                .withMessageContaining("supported: PostgreSQL, MariaDB 10.5+, H2");
    }

    @Test
    void detectsTheDatabaseBehindADataSource() {
        assertThat(DatabaseType.of(new DriverManagerDataSource("jdbc:h2:mem:database-type-tests")))
                .isEqualTo(DatabaseType.H2);
    }

    @Test
    void anUnreachableDatabaseIsReportedAsNotDetected() {
        assertThatIllegalStateException()
                .isThrownBy(() -> DatabaseType.of(new DriverManagerDataSource("jdbc:h2:nowhere:x")))
                .withMessageStartingWith("Could not detect the database type");
    }
}
