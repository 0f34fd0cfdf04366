package io.sumi.autoconfigure;

import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Configuration;

/** Removed {@code sumi.*} properties fail start-up with a message that names them. */
class SumiRetiredPropertiesTests {

    @Test
    void anApplicationThatStillSetsKafkaBusyMaxWaitFailsStartUpNamingIt() {
        assertThatThrownBy(() -> start("sumi.kafka.busy-max-wait=5s"))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("sumi.kafka.busy-max-wait was removed")
                .hasMessageContaining("sumi.kafka.busy-retry-interval");
    }

    @Test
    void aRemovedPropertyIsFoundUnderItsRelaxedNames() {
        assertThatThrownBy(() -> start("sumi.kafka.busyMaxWait=5s"))
                .hasMessageContaining("sumi.kafka.busy-max-wait was removed");
    }

    @Test
    void anApplicationWithoutRemovedPropertiesStarts() {
        assertThatCode(() -> start("sumi.kafka.busy-retry-interval=2s").close()).doesNotThrowAnyException();
    }

    /** Starts through spring.factories, as an application does, so that the registration is tested too. */
    private static ConfigurableApplicationContext start(String property) {
        return new SpringApplicationBuilder(Empty.class)
                .web(WebApplicationType.NONE)
                .properties(property)
                .run();
    }

    @Configuration(proxyBeanMethods = false)
    static class Empty {}
}
