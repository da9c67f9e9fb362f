echo first line
# a comment
help lod
echo after the error
bogus command
