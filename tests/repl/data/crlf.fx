echo windows line ending
echo second
