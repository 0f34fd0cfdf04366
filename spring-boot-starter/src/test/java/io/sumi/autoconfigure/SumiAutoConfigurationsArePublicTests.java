package io.sumi.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.reflect.Modifier;
import java.util.List;
import java.util.stream.StreamSupport;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.context.annotation.ImportCandidates;

/**
 * Every auto-configuration Sumi registers is public, so that an application can name it in
 * {@code @SpringBootApplication(exclude = ...)} and a test in {@code AutoConfigurations.of(...)}.
 */
class SumiAutoConfigurationsArePublicTests {

    @Test
    void everyRegisteredAutoConfigurationIsAPublicClass() throws ClassNotFoundException {
        ClassLoader loader = getClass().getClassLoader();
        List<String> names = StreamSupport.stream(
                        ImportCandidates.load(AutoConfiguration.class, loader).spliterator(), false)
                .filter(name -> name.startsWith("io.sumi."))
                .toList();

        assertThat(names).hasSizeGreaterThanOrEqualTo(10);
        for (String name : names) {
            Class<?> type = Class.forName(name, false, loader);
            assertThat(Modifier.isPublic(type.getModifiers()))
                    .as("%s is public", name)
                    .isTrue();
            assertThat(type.isAnnotationPresent(AutoConfiguration.class))
                    .as("%s is an @AutoConfiguration", name)
                    .isTrue();
        }
    }
}
