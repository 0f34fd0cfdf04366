package io.sumi.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import io.sumi.testing.TestDatabase;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.flyway.autoconfigure.FlywayAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * Regression (issue 19, A14): on MariaDB {@code sumi.consumer.reply.max-size} accepted up to 16 MiB,
 * the server's default {@code max_allowed_packet}, so a reply near the limit failed its completing
 * statement every time and the handler re-ran once per lease for ever. Start-up now compares the
 * limit with the server's {@code max_allowed_packet} and fails with a message that says what to do.
 */
class MariaDbReplySizeStartUpTests {

    private static ApplicationContextRunner runner() {
        String[] settings = TestDatabase.MARIADB.settings("sumi_test_replysize");
        return new ApplicationContextRunner()
                .withPropertyValues(
                        "spring.datasource.url=" + settings[0],
                        "spring.datasource.username=" + settings[1],
                        "spring.datasource.password=" + settings[2],
                        "spring.flyway.locations=classpath:db/sumi/{vendor}")
                .withConfiguration(AutoConfigurations.of(
                        DataSourceAutoConfiguration.class, FlywayAutoConfiguration.class, SumiAutoConfiguration.class));
    }

    @Test
    void aMaxReplySizeTheServersMaxAllowedPacketCannotCarryFailsStartUp() {
        runner().withPropertyValues("sumi.consumer.reply.max-size=16MB").run(context -> {
            assertThat(context).hasFailed();
            Throwable failure = context.getStartupFailure();
            while (failure.getCause() != null) {
                failure = failure.getCause();
            }
            assertThat(failure)
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("sumi.consumer.reply.max-size")
                    .hasMessageContaining("max_allowed_packet");
        });
    }

    @Test
    void theDefaultMaxReplySizeStarts() {
        runner().run(context -> assertThat(context).hasNotFailed());
    }
}
